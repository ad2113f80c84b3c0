//go:build cgo

package tests

import (
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

func cgoTestDrivers() []driver.Driver { return []driver.Driver{cgo.New()} }

// With cgo the tests run drivers/cgo too: in WAL mode, synced at every
// commit for FULL and NORMAL otherwise, as `cellb serve --driver cgo`.
func init() {
	newCgo = func(pragma string) driver.Driver {
		if pragma == "FULL" {
			return &cgo.Driver{Synchronous: cgo.SyncFull}
		}
		return &cgo.Driver{Synchronous: cgo.SyncNormal}
	}
}
