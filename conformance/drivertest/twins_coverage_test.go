package drivertest

import (
	"testing"

	"github.com/cellb/cellb/conformance/suite"
)

// withoutTwin are the drivertest cases no twin in Twins is declared to
// fail, each with the reason why (none: every case has one).
var withoutTwin = map[string]string{}

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not.
func TestEveryCaseHasATwin(t *testing.T) {
	suite.CheckTwinCoverage(t, CaseNames(), suite.CaughtBy(Twins()), withoutTwin)
}
