package app

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
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

// pickDriver configures the named driver with SQLite's synchronous level
// sync, which host.Synchronous names for the node's ownership and mode (a
// fleet's cache need not reach the disk; a primary copy's commits must).
func pickDriver(name, sync string) (driver.Driver, error) {
	if err := checkDriver(name); err != nil {
		return nil, err
	}
	switch name {
	case "wasm":
		// WAL: one sync per commit (FULL) instead of the rollback
		// journal's two.
		return wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous="+sync)), nil
	default: // cgo, modernc
		return optional[name](sync), nil
	}
}
