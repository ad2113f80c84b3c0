package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/drivers/modernc"
)

// durabilityModes is every durability mode the CLI offers, the default
// first: serve --durability opens one, restore --from reads one, and both
// usage texts list them from here.
func durabilityModes() durability.Modes {
	return durability.Modes{ltxlog.Mode(), changeset.Mode(), backup.Mode()}
}

// modeChoices spells the modes for a usage line: "ltx|changeset|backup".
func modeChoices(ms durability.Modes) string { return strings.Join(ms.Names(), "|") }

// scratchDatabase returns a RestoreRequest.Scratch that opens an empty
// modernc database (the driver with SQLite sessions) in a directory next
// to out, and the cleanup that removes that directory.
func scratchDatabase(out string) (func(ctx context.Context) (driver.Conn, error), func()) {
	var dir string
	open := func(ctx context.Context) (driver.Conn, error) {
		if dir == "" {
			d, err := os.MkdirTemp(filepath.Dir(out), ".cellb-restore-*")
			if err != nil {
				return nil, err
			}
			dir = d
		}
		conn, err := modernc.New(modernc.Options{}).Open(ctx, driver.Config{Path: filepath.Join(dir, "cell.db")})
		return conn, err
	}
	cleanup := func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	return open, cleanup
}
