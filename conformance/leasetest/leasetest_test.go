package leasetest

import (
	"context"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestFleetLeasePasses(t *testing.T) {
	t.Parallel()
	Run(t, NewFleetHarness(memstore.New(), FleetOptions{}))
}

// leaseTwin is one twin and the cases that must fail on it.
type leaseTwin struct {
	name string
	wrap func(Harness) Harness
	must []string
}

// fleetTwins are the twins run on the fleet harness.
var fleetTwins = []leaseTwin{
	{"unexclusive", Unexclusive, []string{"Exclusive", "OneWinnerUnderContention"}},
	{"static epoch", StaticEpoch, []string{"EpochsGrow", "ReleaseHandsOver"}},
	{"never fences", NeverFences, []string{"SelfFence", "ReleaseHandsOver"}},
	{"forgetful release", ForgetfulRelease, []string{"ReleaseHandsOver", "CloseReleasesEverything"}},
	{"crash keeps claims", CrashKeepsClaims, []string{"CrashTakeover"}},
	{"refusing grants", RefusingGrants, []string{"AcquireGrants"}},
	{"log-blind epochs", LogBlindEpochs, []string{"EpochsPassTheLog"}},
	{"revives after a pause", RevivesAfterPause, []string{"PausedPastTTLStaysFenced"}},
	{"loses bundles", LosesBundles, []string{"NodeLogSurvivesACrash"}},
	{"skips the credit read", SkipsCreditRead, []string{"NodeLogSealRacesAFlush"}},
}

// TestEveryCaseHasATwin: every case fails on at least one twin of the
// fleet run (each has one; no exceptions).
func TestEveryCaseHasATwin(t *testing.T) {
	var caught [][]string
	for _, tw := range fleetTwins {
		caught = append(caught, tw.must)
	}
	suite.CheckTwinCoverage(t, caseNames(), caught, nil)
}

// TestSuiteRejectsBrokenLeases: each twin must fail, and in the cases that
// are about the promise it breaks.
func TestSuiteRejectsBrokenLeases(t *testing.T) {
	for _, tw := range fleetTwins {
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			h := tw.wrap(NewFleetHarness(memstore.New(), FleetOptions{}))
			defer h.Close()
			expectRejected(t, tw.name, RunReport(context.Background(), h), tw.must)
		})
	}
}

// named is rep's results as the shared runner's outcomes.
func (r Report) named() []suite.Named {
	var out []suite.Named
	for _, res := range r.Results {
		o := suite.Outcome{Skipped: res.Skipped}
		switch {
		case res.Skipped:
			o.Reason = res.Message
		case !res.Passed:
			o.Failures = []string{res.Message}
		}
		out = append(out, suite.Named{Name: res.Case, Outcome: o})
	}
	return out
}

// expectRejected fails t unless every case in must failed in rep, the
// report of twin's run.
func expectRejected(t *testing.T, twin string, rep Report, must []string) {
	t.Helper()
	for i, v := range suite.Judge(must, rep.named()) {
		if v != suite.Rejected {
			t.Errorf("twin %q passed case %s (failed: %v)", twin, must[i], rep.Failed())
		}
	}
}
