package leasetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
)

// Run runs every case as a subtest of t on h, through the shared runner (a
// case's Fatalf ends only that case, a panic fails only that case, Skipf
// skips its subtest). h is the caller's to close.
func Run(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	if h == nil {
		t.Fatal("leasetest: the harness is nil")
	}
	cfg := suite.NewConfig(opts)
	lim := suite.LimitsFor(cfg, 0)
	suite.Subtests(t, suiteCases(), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(c.Name), lim, true)
	}, nil)
}

// RunReport runs every case without a *testing.T and reports what each
// found. It fails on a nil harness, and with ctx's error when ctx ends
// before every case ran (those not run are skipped). h is the caller's
// to close.
func RunReport(ctx context.Context, h Harness, opts ...suite.Option) (suite.Report, error) {
	rep := suite.Report{Suite: "leasetest"}
	if h == nil {
		rep.SetupError = "the harness is nil"
		return rep, errors.New("leasetest: " + rep.SetupError)
	}
	cfg := suite.NewConfig(opts)
	rep.Notes = cfg.Notes(suiteCases())
	lim := suite.LimitsFor(cfg, 0)
	var err error
	rep.Cases, err = suite.Collect(ctx, suiteCases(), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(c.Name), lim, false)
	})
	return rep, err
}

// runCase runs c with the shared runner; without a CaseTimeout, the
// harness's Advance and the cases' own waits bound it.
func runCase(ctx context.Context, h Harness, c testCase, lim suite.Limits, stack bool) suite.Outcome {
	return suite.RunCase(ctx, lim, stack, func(ctx context.Context, rec *suite.Recorder) {
		c.run(rec, ctx, h)
	})
}

// CaseNames lists the suite's cases in run order.
func CaseNames() []string {
	out := make([]string, len(allCases))
	for i, c := range allCases {
		out[i] = c.name
	}
	return out
}

func suiteCases() []suite.Case {
	out := make([]suite.Case, len(allCases))
	for i, c := range allCases {
		out[i] = suite.Case{Name: c.name}
	}
	return out
}

func caseNamed(name string) testCase {
	return allCases[slices.IndexFunc(allCases, func(c testCase) bool { return c.name == name })]
}
