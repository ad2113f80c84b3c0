package wasm

import (
	"testing"

	"github.com/cellb/cellb/conformance/drivertest"
)

// TestConformance runs the public driver suite on this driver.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{Driver: New()})
}

// TestConformanceRejectsTwins shows the suite has teeth here: each
// deliberately broken wrapper of this driver fails the cases that target
// its fault.
func TestConformanceRejectsTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("the twins rerun the capture cases several times")
	}
	drivertest.RunTwins(t, drivertest.Harness{Driver: New()})
}
