package app

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/drivers/wasm"
)

// optional holds the drivers a build tag brings in (driver_cgo.go,
// driver_modernc.go); a default build has neither (docs/drivers.md).
var optional = map[string]func(pragma string) driver.Driver{}

// errNoCgo and errNoModernc are what a binary without the driver answers.
var (
	errNoCgo = errors.New("this cellb was built without the cgo driver; " +
		"rebuild with the cellb_cgo tag, CGO_ENABLED=1 and a C compiler (gcc or clang), e.g. CGO_ENABLED=1 go build -tags cellb_cgo ./cmd/cellb, " +
		"or use --driver wasm (pure Go)")
	errNoModernc = errors.New("this cellb was built without the modernc driver (the only one with SQLite sessions, which the changeset mode needs); " +
		"rebuild with the cellb_modernc tag, e.g. go build -tags cellb_modernc ./cmd/cellb, or use --driver wasm")
)

// checkDriver says whether this binary can run the named driver, before
// anything is started.
func checkDriver(name string) error {
	switch {
	case name == "wasm":
		return nil
	case name == "cgo" && optional[name] == nil:
		return errNoCgo
	case name == "modernc" && optional[name] == nil:
		return errNoModernc
	case name == "cgo" || name == "modernc":
		return nil
	}
	return fmt.Errorf("unknown driver %q (want wasm, cgo or modernc)", name)
}

// sessionsDriver is the scratch database a changeset restore replays
// into: modernc's, the only driver with SQLite sessions.
func sessionsDriver() (driver.Driver, error) {
	if err := checkDriver("modernc"); err != nil {
		return nil, err
	}
	return optional["modernc"](""), nil
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
	default: // cgo, modernc
		return optional[name](pragma), nil
	}
}
