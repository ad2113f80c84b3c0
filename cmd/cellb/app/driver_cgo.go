//go:build cgo && cellb_cgo

package app

import (
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

func init() { optional["cgo"] = newCgo }

// newCgo is drivers/cgo in WAL mode, synced at every commit when SQLite
// must sync each commit (pragma FULL), NORMAL otherwise.
func newCgo(pragma string) driver.Driver {
	if pragma == "FULL" {
		return &cgo.Driver{Synchronous: cgo.SyncFull}
	}
	return &cgo.Driver{Synchronous: cgo.SyncNormal}
}
