package r2test_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/r2test"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestMemstorePasses(t *testing.T) {
	r2test.Run(t, r2test.Harness{Store: memstore.New()})
}

// TestEveryTwinFailsTheSuite: the suite rejects every twin, each in the
// cases it names.
func TestEveryTwinFailsTheSuite(t *testing.T) {
	for _, tw := range r2test.Twins() {
		if len(tw.CaughtBy) == 0 {
			t.Errorf("twin %s names no case that catches it", tw.Name)
		}
	}
	r2test.RunTwins(t, r2test.Harness{Store: memstore.New()})
}

// withoutTwin are the cases no twin in r2test.Twins is declared to fail,
// each with the reason why (none: every case has one).
var withoutTwin = map[string]string{}

// TestEveryCaseHasATwin: a case that no twin is declared to fail needs
// one, or an exception above saying why not.
func TestEveryCaseHasATwin(t *testing.T) {
	suite.CheckTwinCoverage(t, r2test.CaseNames(), suite.CaughtBy(r2test.Twins()), withoutTwin)
}
