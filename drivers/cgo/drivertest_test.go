//go:build cgo

package cgo_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/drivertest"
	"github.com/cellb/cellb/drivers/cgo"
)

func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{Driver: cgo.New()})
}

func TestConformanceRejectsTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite once per twin")
	}
	drivertest.RunTwins(t, drivertest.Harness{Driver: cgo.New()})
}
