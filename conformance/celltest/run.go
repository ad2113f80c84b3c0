package celltest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/suite"
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
	// case). Empty means a temporary directory removed afterwards. (Cases
	// are chosen with suite.Only and suite.Skip; the Harness holds nothing
	// to release.)
	Dir string
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
func Run(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	if h.Driver == nil {
		t.Fatal("celltest: Harness.Driver is nil")
	}
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	cases := allCases()
	cfg := suite.NewConfig(opts)
	lim := suite.LimitsFor(cfg, 0)
	suite.Subtests(t, suiteCases(cases), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(cases, c.Name), lim)
	}, nil)
}

// RunReport runs the suite without a testing.T and returns what each case
// found. It fails on a harness without a driver, and with ctx's error
// when ctx ends before every case ran (those not run are skipped).
func RunReport(ctx context.Context, h Harness, opts ...suite.Option) (suite.Report, error) {
	rep := suite.Report{Suite: "celltest"}
	if h.Driver == nil {
		rep.SetupError = "Harness.Driver is nil"
		return rep, fmt.Errorf("celltest: %s", rep.SetupError)
	}
	rep.Subject = h.Driver.Name()
	if h.Dir == "" {
		dir, err := os.MkdirTemp("", "celltest-")
		if err != nil {
			rep.SetupError = err.Error()
			return rep, err
		}
		defer os.RemoveAll(dir)
		h.Dir = dir
	}
	cases := allCases()
	cfg := suite.NewConfig(opts)
	rep.Notes = cfg.Notes(suiteCases(cases))
	lim := suite.LimitsFor(cfg, 0)
	var err error
	rep.Cases, err = suite.Collect(ctx, suiteCases(cases), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(cases, c.Name), lim)
	})
	return rep, err
}

func suiteCases(cases []caseDef) []suite.Case {
	out := make([]suite.Case, len(cases))
	for i, c := range cases {
		out[i] = suite.Case{Name: c.name}
	}
	return out
}

func caseNamed(cases []caseDef, name string) caseDef {
	return cases[slices.IndexFunc(cases, func(d caseDef) bool { return d.name == name })]
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
	all = append(all, forkCases()...)
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
func runCase(ctx context.Context, h Harness, def caseDef, lim suite.Limits) suite.Outcome {
	return suite.RunCase(ctx, lim, true, func(ctx context.Context, rec *suite.Recorder) {
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
