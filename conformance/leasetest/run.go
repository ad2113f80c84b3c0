package leasetest

import (
	"context"
	"slices"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
)

// Run runs every case as a subtest of t, through the shared runner (a
// case's Fatalf ends only that case, a panic fails only that case, Skipf
// skips its subtest).
func Run(t *testing.T, h Harness) {
	t.Helper()
	suite.Subtests(t, caseNames(), nil, func(ctx context.Context, name string) suite.Outcome {
		return runCase(ctx, h, caseNamed(name), true)
	}, nil)
}

// runCase runs c with the shared runner, with no time limit: the harness's
// Advance and the cases' own waits bound it.
func runCase(ctx context.Context, h Harness, c testCase, stack bool) suite.Outcome {
	return suite.RunCase(ctx, suite.Limits{}, stack, func(ctx context.Context, rec *suite.Recorder) {
		c.run(rec, ctx, h)
	})
}

func caseNames() []string {
	out := make([]string, len(allCases))
	for i, c := range allCases {
		out[i] = c.name
	}
	return out
}

func caseNamed(name string) testCase {
	return allCases[slices.IndexFunc(allCases, func(c testCase) bool { return c.name == name })]
}

// Result is one case's outcome in a Report.
type Result struct {
	Case    string
	Passed  bool
	Skipped bool
	Message string
}

// Report is the outcome of RunReport.
type Report struct {
	Results []Result
}

// Failed lists the names of the cases that failed.
func (r Report) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if !res.Passed && !res.Skipped {
			out = append(out, res.Case)
		}
	}
	return out
}

// RunReport runs every case without a *testing.T.
func RunReport(ctx context.Context, h Harness) Report {
	var rep Report
	for _, c := range allCases {
		o := runCase(ctx, h, c, false)
		res := Result{Case: c.name, Passed: !o.Failed(), Skipped: o.Skipped, Message: o.Reason}
		if o.Failed() {
			res.Message = o.Failures[0]
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}
