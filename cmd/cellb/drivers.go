package main

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
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

// commitSync is how often the local SQLite file is synced, which the
// node's mode decides (see pickDriver).
type commitSync int

const (
	// syncEachCommit: SQLite syncs every commit (synchronous=FULL).
	syncEachCommit commitSync = iota
	// syncPerGroup: SQLite leaves commits unsynced (synchronous=NORMAL,
	// which in WAL mode syncs only at checkpoints, so the file stays
	// consistent) and the durability log syncs the local file once per
	// group commit, beside its upload (OpenRequest.SyncLocal).
	syncPerGroup
	// syncNone: the local file is a cache the bucket replaces at every
	// activation; no sync per commit.
	syncNone
)

// nodeSync is the commitSync of a node: none when the bucket wins (fleet),
// one per group commit when the local file is the primary copy and the
// mode's log syncs it (Mode.SyncsLocal), else one per commit.
func nodeSync(bucketWins bool, mode durability.Mode) commitSync {
	switch {
	case bucketWins:
		return syncNone
	case mode.SyncsLocal:
		return syncPerGroup
	}
	return syncEachCommit
}

// pickDriver configures the named driver for the node's commitSync. When
// the bucket wins (fleet), every activation replaces the local file with
// the bucket's copy and a reply waits for the bucket, so the local commit
// need not reach the disk. When the local file is the primary copy, each
// acknowledged commit must be on the disk, because after a power loss a
// database that is not empty is never restored from the bucket: the log
// syncs it once per group commit, or SQLite syncs every commit.
func pickDriver(name string, cs commitSync) (driver.Driver, error) {
	if err := checkDriver(name); err != nil {
		return nil, err
	}
	pragma := [...]string{syncEachCommit: "FULL", syncPerGroup: "NORMAL", syncNone: "OFF"}[cs]
	switch name {
	case "wasm":
		// WAL: one sync per commit (FULL) instead of the rollback
		// journal's two.
		return wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous="+pragma)), nil
	case "cgo":
		return cgoDriver(cs)
	default: // modernc
		return modernc.New(modernc.Options{Synchronous: pragma}), nil
	}
}
