package celltest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/internal/suite"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/wakeport"
)

// Harness describes what the suite runs on.
type Harness struct {
	// Driver is the SQLite driver under test.
	Driver driver.Driver
	// Dir holds the cases' data directories (a fresh subdirectory per
	// case). Empty means a temporary directory removed afterwards.
	Dir string
	// Cases, when not empty, restricts the run: an entry selects the case
	// of that name, or every case under it when it ends in "/".
	Cases []string
	// WrapLog, if set, wraps the durability.Log of every runtime the suite
	// builds (the negative twins use it to break durability).
	WrapLog func(durability.Log) durability.Log
	// WrapWake, if set, wraps the wake publisher of every runtime the wake
	// cases build with one (the negative twins use it to break the
	// publication's hold on replies).
	WrapWake func(wakeport.Publisher) wakeport.Publisher
	// Configure, if set, edits the options of every runtime the suite
	// builds, after the case set its own (the negative twins use it to
	// build a misconfigured runtime).
	Configure func(*cell.Options)
	// Timeout bounds each wait in a case (default 10 s): a wait that runs
	// out is a failure, never a pass.
	Timeout time.Duration
}

func (h Harness) selects(name string) bool { return suite.Selects(h.Cases, name) }

// Report is the outcome of RunReport.
type Report struct {
	Results []CaseResult
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name     string
	Failures []string
	Log      []string
	// Skipped says why the case did not apply to the harness (a driver
	// without sessions, say); empty when it ran.
	Skipped string
}

// Failed reports whether the case found a broken guarantee.
func (r CaseResult) Failed() bool { return len(r.Failures) > 0 }

// Failed returns the names of the failed cases, in run order.
func (r Report) Failed() []string {
	var names []string
	for _, c := range r.Results {
		if c.Failed() {
			names = append(names, c.Name)
		}
	}
	return names
}

// String lists every failure.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "celltest: %d cases, %d failed\n", len(r.Results), len(r.Failed()))
	for _, c := range r.Results {
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "  %s: %s\n", c.Name, f)
		}
	}
	return b.String()
}

// CaseNames lists every case, in run order.
func CaseNames() []string { return caseNames(allCases()) }

func caseNames(cases []caseDef) []string {
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
	}
	return names
}

// Run runs the suite as subtests of t, one per case.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Driver == nil {
		t.Fatal("celltest: Harness.Driver is nil")
	}
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	cases := allCases()
	suite.Subtests(t, caseNames(cases), h.Cases, func(ctx context.Context, name string) suite.Outcome {
		return runCase(ctx, h, cases[slices.IndexFunc(cases, func(d caseDef) bool { return d.name == name })])
	}, nil)
}

// RunReport runs the suite without a testing.T and returns what each case
// found; only a malformed harness is an error.
func RunReport(ctx context.Context, h Harness) (Report, error) {
	if h.Driver == nil {
		return Report{}, fmt.Errorf("celltest: Harness.Driver is nil")
	}
	if h.Dir == "" {
		dir, err := os.MkdirTemp("", "celltest-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(dir)
		h.Dir = dir
	}
	cases := allCases()
	ran, err := suite.Collect(ctx, caseNames(cases), h.Cases, func(ctx context.Context, name string) suite.Outcome {
		return runCase(ctx, h, cases[slices.IndexFunc(cases, func(d caseDef) bool { return d.name == name })])
	})
	var rep Report
	for _, r := range ran {
		rep.Results = append(rep.Results, CaseResult{Name: r.Name, Failures: r.Failures, Log: r.Log, Skipped: r.Reason})
	}
	return rep, err
}

type caseDef struct {
	name string
	run  func(c *checkT)
}

// allCases is the suite in run order, built per call (no package state).
func allCases() []caseDef {
	var all []caseDef
	all = append(all, turnCases()...)
	all = append(all, outputCases()...)
	all = append(all, outgoingCases()...)
	all = append(all, streamCases()...)
	all = append(all, commitCases()...)
	all = append(all, resetCases()...)
	all = append(all, sqlCases()...)
	all = append(all, kvCases()...)
	all = append(all, storageCases()...)
	all = append(all, bookmarkCases()...)
	all = append(all, restoreNextCases()...)
	all = append(all, alarmCases()...)
	all = append(all, wakeCases()...)
	all = append(all, lifecycleCases()...)
	all = append(all, websocketCases()...)
	all = append(all, bucketCases()...)
	return all
}

// runCase runs one case in its own directory (suite.RunCase: Fatalf and
// skips end the case, a panic is a failure), then runs the case's
// cleanups and removes the directory.
func runCase(ctx context.Context, h Harness, def caseDef) suite.Outcome {
	return suite.RunCase(ctx, suite.Limits{}, true, func(ctx context.Context, rec *suite.Recorder) {
		c := &checkT{ctx: ctx, h: h, rec: rec}
		if c.h.Timeout <= 0 {
			c.h.Timeout = 10 * time.Second
		}
		defer func() {
			c.cleanup()
			if c.dir != "" {
				os.RemoveAll(c.dir)
			}
		}()
		dir, err := os.MkdirTemp(h.Dir, strings.ReplaceAll(def.name, "/", "-")+"-")
		if err != nil {
			c.fatalf("cannot create the case directory: %v", err)
		}
		c.dir = dir
		def.run(c)
	})
}
