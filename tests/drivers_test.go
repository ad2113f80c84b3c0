package tests

import (
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/drivers/modernc"
	"github.com/cellb/cellb/drivers/wasm"
)

// nodeSync is SQLite's synchronous level for a node (a fleet's or a
// single host's) under mode: what cellb serve configures, host.Synchronous.
func nodeSync(fleet bool, mode durability.Mode) string {
	if fleet {
		return host.Synchronous(host.Fleet, mode)
	}
	return host.Synchronous(host.SingleHost, mode)
}

// newCgo is drivers/cgo (driver_cgo_test.go) when cgo is on, else nil.
var newCgo func(pragma string) driver.Driver

// pickDriver is the named driver (wasm in WAL mode, cgo, modernc) with
// SQLite's synchronous level pragma (OFF, NORMAL, FULL); cgo without cgo
// is an error, which the tests skip on.
func pickDriver(name, pragma string) (driver.Driver, error) {
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
