//go:build cgo

package main

import (
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

// cgoAvailable: this binary was built with cgo, so the cgo driver is in it.
func cgoAvailable() error { return nil }

// cgoDriver is drivers/cgo for the node's mode (see pickDriver): WAL synced
// at every commit when SQLite must sync each commit, NORMAL otherwise.
func cgoDriver(cs commitSync) (driver.Driver, error) {
	if cs != syncEachCommit {
		return &cgo.Driver{Synchronous: cgo.SyncNormal}, nil
	}
	return &cgo.Driver{Synchronous: cgo.SyncFull}, nil
}
