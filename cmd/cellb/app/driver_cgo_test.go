//go:build cgo

package app

import (
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

// The tests run the cgo driver wherever cgo is on, whatever tags the test
// binary was built with (the binary cellb itself needs cellb_cgo:
// driver_cgo.go).
func init() {
	if optional["cgo"] == nil {
		optional["cgo"] = func(pragma string) driver.Driver {
			if pragma == "FULL" {
				return &cgo.Driver{Synchronous: cgo.SyncFull}
			}
			return &cgo.Driver{Synchronous: cgo.SyncNormal}
		}
	}
}

// With cgo, --driver cgo is accepted and gives drivers/cgo, synced at every
// commit when SQLite must sync each commit, NORMAL otherwise.
func TestCgoBuildHasTheCgoDriver(t *testing.T) {
	if _, err := parseServe([]string{"--driver", "cgo"}); err != nil {
		t.Fatalf("parseServe --driver cgo: %v", err)
	}
	for cs, want := range map[string]cgo.Synchronous{"FULL": cgo.SyncFull, "NORMAL": cgo.SyncNormal, "OFF": cgo.SyncNormal} {
		d, err := pickDriver("cgo", cs)
		if err != nil {
			t.Fatalf("pickDriver(cgo, %v): %v", cs, err)
		}
		if c, ok := d.(*cgo.Driver); !ok || c.Synchronous != want {
			t.Fatalf("pickDriver(cgo, %v) = %#v, want *cgo.Driver with Synchronous %v", cs, d, want)
		}
	}
}
