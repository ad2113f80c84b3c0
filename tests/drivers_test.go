package tests

import (
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/drivers/modernc"
	"github.com/cellb/cellb/drivers/wasm"
)

// commitSync is how often a node's local SQLite file is synced; the tests
// configure each driver as `cellb serve` does for the same node
// (cmd/cellb/app/drivers.go, whose choice TestNodeSyncPicksTheLocalSync
// checks there).
type commitSync int

const (
	// syncEachCommit: synchronous=FULL, SQLite syncs every commit.
	syncEachCommit commitSync = iota
	// syncPerGroup: synchronous=NORMAL; the durability log syncs the
	// local file once per group commit.
	syncPerGroup
	// syncNone: synchronous=OFF; the bucket wins (a fleet).
	syncNone
)

// nodeSync is the commitSync of a node: none when the bucket wins, one
// per group commit when the mode's log syncs the local file, else one per
// commit.
func nodeSync(bucketWins bool, mode durability.Mode) commitSync {
	switch {
	case bucketWins:
		return syncNone
	case mode.SyncsLocal:
		return syncPerGroup
	}
	return syncEachCommit
}

// newCgo is drivers/cgo (driver_cgo_test.go) when cgo is on, else nil.
var newCgo func(pragma string) driver.Driver

// pickDriver is the named driver (wasm in WAL mode, cgo, modernc) synced
// as cs says; cgo without cgo is an error, which the tests skip on.
func pickDriver(name string, cs commitSync) (driver.Driver, error) {
	pragma := [...]string{syncEachCommit: "FULL", syncPerGroup: "NORMAL", syncNone: "OFF"}[cs]
	switch {
	case name == "wasm":
		return wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous="+pragma)), nil
	case name == "modernc":
		return modernc.New(modernc.Options{Synchronous: pragma}), nil
	case name == "cgo" && newCgo != nil:
		return newCgo(pragma), nil
	case name == "cgo":
		return nil, fmt.Errorf("the cgo driver needs cgo (CGO_ENABLED=1 and a C compiler)")
	}
	return nil, fmt.Errorf("unknown driver %q (want wasm, cgo or modernc)", name)
}
