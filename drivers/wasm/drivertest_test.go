package wasm

import (
	"testing"

	"github.com/cellb/cellb/conformance/drivertest"
)

// The public driver suite runs on both journal modes the driver offers,
// and on WAL mode with exclusive locking (the embedded default's).
func conformanceDrivers() map[string]*Driver {
	return map[string]*Driver{
		"rollback":      New(),
		"wal":           New(WithJournalMode(JournalWAL), withWALVerify()),
		"wal-exclusive": New(WithJournalMode(JournalWAL), WithExclusiveLocking(), withWALVerify()),
	}
}

// TestConformance runs the public driver suite on this driver.
func TestConformance(t *testing.T) {
	for name, d := range conformanceDrivers() {
		t.Run(name, func(t *testing.T) {
			drivertest.Run(t, drivertest.Harness{Driver: d})
		})
	}
}

// TestConformanceRejectsTwins shows the suite has teeth here: each
// deliberately broken wrapper of this driver fails the cases that target
// its fault.
func TestConformanceRejectsTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("the twins rerun the capture cases several times")
	}
	for name, d := range conformanceDrivers() {
		t.Run(name, func(t *testing.T) {
			drivertest.RunTwins(t, drivertest.Harness{Driver: d})
		})
	}
}
