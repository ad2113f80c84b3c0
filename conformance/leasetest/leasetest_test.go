package leasetest

import (
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestFleetLeasePasses(t *testing.T) {
	t.Parallel()
	Run(t, NewFleetHarness(memstore.New(), FleetOptions{}))
}

// TestEveryCaseHasATwin: every case fails on at least one twin of the
// fleet run (each has one; no exceptions).
func TestEveryCaseHasATwin(t *testing.T) {
	suite.CheckTwinCoverage(t, CaseNames(), suite.CaughtBy(Twins()), nil)
}

// TestSuiteRejectsBrokenLeases: each twin must fail, and in the cases that
// are about the promise it breaks.
func TestSuiteRejectsBrokenLeases(t *testing.T) {
	t.Parallel()
	h := NewFleetHarness(memstore.New(), FleetOptions{})
	defer h.Close()
	RunTwins(t, h)
}
