package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/modernc"
)

// restoreSources are the logs a cell's state can be rebuilt from, by the
// prefix each keeps under cells/<cell>/.
var restoreSources = []struct{ name, prefix string }{
	{"ltx", "ltx/"},
	{"changeset", "changeset/"},
	{"backup", "backup/"},
}

// pickRestoreSource returns the source named by from, or, when from is
// empty, the one source the bucket holds for the cell.
func pickRestoreSource(ctx context.Context, s store.Store, cellKey, from string) (string, error) {
	if from != "" {
		for _, src := range restoreSources {
			if src.name == from {
				return from, nil
			}
		}
		return "", fmt.Errorf("--from %q: want ltx, changeset or backup", from)
	}
	var found []string
	for _, src := range restoreSources {
		page, err := s.List(ctx, store.ListOptions{Prefix: "cells/" + cellKey + "/" + src.prefix, Limit: 1})
		if err != nil {
			return "", err
		}
		if len(page.Objects) > 0 {
			found = append(found, src.name)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("the bucket holds no LTX, changeset or backup files for this cell (under %s)", ltx.CellPrefix(cellKey))
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("the bucket holds several logs for this cell (%s): pick one with --from", strings.Join(found, ", "))
}

// restoreImage rebuilds the cell from a changeset log or a backup and
// writes its image to out atomically. It returns what it restored from.
func restoreImage(ctx context.Context, s store.Store, cellKey, source, out string) (string, int64, error) {
	var img []byte
	var what string
	switch source {
	case "backup":
		res, err := backup.Restore(ctx, s, cellKey)
		if err != nil {
			return "", 0, err
		}
		img, what = res.Image, fmt.Sprintf("backup %s", res.Key)
	case "changeset":
		// Changesets apply through SQLite's session extension, which only
		// the modernc driver has; the database it builds is scratch.
		scratch, err := os.MkdirTemp(filepath.Dir(out), ".cellb-restore-*")
		if err != nil {
			return "", 0, err
		}
		defer os.RemoveAll(scratch)
		conn, err := modernc.New(modernc.Options{}).Open(ctx, driver.Config{Path: filepath.Join(scratch, "cell.db")})
		if err != nil {
			return "", 0, err
		}
		res, rerr := changeset.Restore(ctx, s, cellKey, conn)
		if rerr == nil {
			img, rerr = conn.Serialize(ctx)
		}
		if err := errors.Join(rerr, conn.Close()); err != nil {
			return "", 0, err
		}
		what = fmt.Sprintf("the changeset log (epoch %d, commit %d, %d files)", res.Epoch, res.Seq, len(res.Files))
	default:
		return "", 0, fmt.Errorf("unknown source %q", source)
	}
	n, err := writeAtomically(out, func(f *os.File) error {
		_, err := f.Write(img)
		return err
	})
	return what, n, err
}
