package leasetest

import (
	"context"
	"testing"

	"github.com/cellb/cellb/conformance/internal/suite"
)

// Run runs every case as a subtest of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range allCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, t.Context(), h) })
	}
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
		o := suite.RunCase(ctx, suite.Limits{}, false, func(ctx context.Context, rec *suite.Recorder) {
			c.run(rec, ctx, h)
		})
		res := Result{Case: c.name, Passed: !o.Failed(), Skipped: o.Skipped, Message: o.Reason}
		if o.Failed() {
			res.Message = o.Failures[0]
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}
