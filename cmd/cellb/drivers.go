package main

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/modernc"
	"github.com/cellb/cellb/drivers/wasm"
)

// errNoCgo is what --driver cgo answers in a cellb built without cgo
// (driver_nocgo.go): the cgo driver needs a C compiler at build time.
var errNoCgo = errors.New("this cellb was built without cgo, so the cgo driver is not in it; " +
	"rebuild with CGO_ENABLED=1 and a C compiler (gcc or clang), e.g. CGO_ENABLED=1 go build ./cmd/cellb, " +
	"or use --driver wasm or modernc (pure Go)")

// checkDriver says whether this binary can run the named driver, before
// anything is started.
func checkDriver(name string) error {
	switch name {
	case "wasm", "modernc":
		return nil
	case "cgo":
		return cgoAvailable()
	}
	return fmt.Errorf("unknown driver %q (want wasm, cgo or modernc)", name)
}

// pickDriver configures the named driver for the node's mode. When the
// bucket wins (fleet), every activation replaces the local file with the
// bucket's copy and a reply waits for the bucket, so the local commit need
// not reach the disk: no sync per commit. When the local file is the primary
// copy, each commit is synced, because after a power loss a database that
// is not empty is never restored from the bucket.
func pickDriver(name string, bucketWins bool) (driver.Driver, error) {
	if err := checkDriver(name); err != nil {
		return nil, err
	}
	switch name {
	case "wasm":
		// WAL: one sync per commit (FULL) instead of the rollback
		// journal's two, none when the bucket wins.
		if bucketWins {
			return wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=OFF")), nil
		}
		return wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=FULL")), nil
	case "cgo":
		return cgoDriver(bucketWins)
	default: // modernc
		if bucketWins {
			return modernc.New(modernc.Options{Synchronous: "OFF"}), nil
		}
		return modernc.New(modernc.Options{Synchronous: "FULL"}), nil
	}
}
