//go:build cgo

package main

import (
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

func cgoTestDrivers() []driver.Driver { return []driver.Driver{cgo.New()} }

// With cgo, --driver cgo is accepted and gives drivers/cgo, synced at every
// commit unless the bucket wins.
func TestCgoBuildHasTheCgoDriver(t *testing.T) {
	if _, err := parseServe([]string{"--driver", "cgo"}); err != nil {
		t.Fatalf("parseServe --driver cgo: %v", err)
	}
	for _, bucketWins := range []bool{false, true} {
		d, err := pickDriver("cgo", bucketWins)
		if err != nil {
			t.Fatalf("pickDriver(cgo, %v): %v", bucketWins, err)
		}
		want := cgo.SyncFull
		if bucketWins {
			want = cgo.SyncNormal
		}
		if c, ok := d.(*cgo.Driver); !ok || c.Synchronous != want {
			t.Fatalf("pickDriver(cgo, %v) = %#v, want *cgo.Driver with Synchronous %v", bucketWins, d, want)
		}
	}
}
