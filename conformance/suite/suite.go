// Package suite is the runner the conformance suites (celltest,
// drivertest, leasetest, storetest, r2test) share, under Run as without a
// *testing.T (RunReport, r2test's Check): case selection, running one
// case with or without a *testing.T (a Recorder that stands in for it,
// Fatalf and Skipf ending the case's goroutine as testing.T's do, a panic
// turned into a failure, an optional time limit), reporting an outcome
// onto a *testing.T, and judging a negative twin's run. Each suite keeps
// its own public API (Run, RunReport or Check, Report, Twins) on top of it.
package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Selects reports whether a case filter admits name: an empty filter
// admits every case; an entry selects the case of that exact name, or
// every case under it when it ends in "/" (e.g. "capture/").
func Selects(filter []string, name string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, c := range filter {
		if c == name || (strings.HasSuffix(c, "/") && strings.HasPrefix(name, c)) {
			return true
		}
	}
	return false
}

// Outcome is what one case found.
type Outcome struct {
	// Failures are the broken claims, in the order they were reported.
	Failures []string
	// Log is informational output.
	Log []string
	// Skipped is set when the case ended with Skipf and reported no
	// failure (a skip never hides a failure); Reason says why.
	Skipped bool
	Reason  string
}

// Failed reports whether the case reported a failure.
func (o Outcome) Failed() bool { return len(o.Failures) > 0 }

// Recorder is the stand-in for a *testing.T that a case reports to. It is
// safe for concurrent use; Fatalf and Skipf end the calling goroutine
// (runtime.Goexit, as testing.T's do), so call them only from the case's
// own goroutine.
type Recorder struct {
	mu       sync.Mutex
	failures []string
	logs     []string
	skipped  bool
	reason   string
	helpers  map[string]bool // functions that called Helper
}

// Helper marks the calling function as a helper, as testing.T's does: a
// failure is attributed to the first caller that is not one. The case
// runs in a goroutine of its own, so testing's attribution would name the
// shared runner; the Recorder puts the case's file and line at the front
// of each failure instead.
func (r *Recorder) Helper() {
	var pc [1]uintptr
	if runtime.Callers(2, pc[:]) == 0 {
		return
	}
	f, _ := runtime.CallersFrames(pc[:]).Next()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.helpers == nil {
		r.helpers = map[string]bool{}
	}
	r.helpers[f.Function] = true
}

// recorderFuncs prefixes the Recorder's own methods, never the place of a
// failure.
var recorderFuncs = reflect.TypeOf(Recorder{}).PkgPath() + ".(*Recorder)."

// where is "file.go:line: " of the first frame above the Recorder that is
// not a helper, or "" when there is none.
func (r *Recorder) where() string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, recorderFuncs) && !r.helpers[f.Function] {
			return fmt.Sprintf("%s:%d: ", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

// Errorf records a failure, prefixed with the case's file and line; the
// case goes on.
func (r *Recorder) Errorf(format string, args ...any) {
	at := r.where()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, at+fmt.Sprintf(format, args...))
}

// runnerErrorf records a failure the runner finds (a panic, a time limit),
// which no line of the case reported.
func (r *Recorder) runnerErrorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// Fatalf records a failure and ends the case.
func (r *Recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// Logf records informational output.
func (r *Recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// Skipf ends a case that does not apply, saying why.
func (r *Recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped, r.reason = true, fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// Failed reports whether a failure was recorded.
func (r *Recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

// Outcome is what the Recorder holds now.
func (r *Recorder) Outcome() Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := Outcome{Failures: slices.Clone(r.failures), Log: slices.Clone(r.logs)}
	if r.skipped && len(r.failures) == 0 {
		o.Skipped, o.Reason = true, r.reason
	}
	return o
}

// Limits bound a case's run time. The zero value sets no limit.
type Limits struct {
	// Timeout, when positive, ends the case's context after this long; a
	// case still running then fails with "did not finish within
	// <Timeout>".
	Timeout time.Duration
	// Grace is how long a case whose context ended is waited for before
	// it is abandoned, failing with "did not finish within <Timeout> and
	// ignored the end of its context; abandoned".
	Grace time.Duration
}

// RunCase runs body in its own goroutine with a fresh Recorder and a
// context derived from ctx (ended when the case returns, or at the
// Timeout), turns a panic into a failure carrying the stack when stack
// is set, and returns what the case recorded. The case's deferred
// functions run on every way out (return, Fatalf, Skipf, panic).
func RunCase(ctx context.Context, lim Limits, stack bool, body func(ctx context.Context, rec *Recorder)) Outcome {
	rec := &Recorder{}
	cctx, cancel := context.WithCancel(ctx)
	if lim.Timeout > 0 {
		cancel()
		cctx, cancel = context.WithTimeout(ctx, lim.Timeout)
	}
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				if stack {
					rec.runnerErrorf("panic: %v\n%s", p, debug.Stack())
				} else {
					rec.runnerErrorf("panic: %v", p)
				}
			}
		}()
		body(cctx, rec)
	}()
	if lim.Timeout <= 0 {
		<-done
		return rec.Outcome()
	}
	select {
	case <-done:
		return rec.Outcome()
	case <-cctx.Done():
	}
	grace := time.NewTimer(lim.Grace)
	defer grace.Stop()
	select {
	case <-done:
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			rec.runnerErrorf("did not finish within %v", lim.Timeout)
		}
	case <-grace.C:
		rec.runnerErrorf("did not finish within %v and ignored the end of its context; abandoned", lim.Timeout)
	}
	return rec.Outcome()
}

// Emit reports o onto t: its log lines, each failure as an error, and a
// skip when the case was skipped.
func Emit(t testing.TB, o Outcome) {
	t.Helper()
	for _, l := range o.Log {
		t.Log(l)
	}
	for _, f := range o.Failures {
		t.Error(f)
	}
	if o.Skipped {
		t.Skip(o.Reason)
	}
}

// Named is one case's outcome under its name.
type Named struct {
	Name string
	Outcome
}

// Subtests runs, as subtests of t in the order given, each name filter
// admits, reporting each outcome run returns (Emit); after calls it, when
// set, with the subtest and the outcome (for a suite's own notes).
func Subtests(t *testing.T, names, filter []string, run func(ctx context.Context, name string) Outcome, after func(t *testing.T, o Outcome)) {
	t.Helper()
	for _, name := range names {
		if !Selects(filter, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			o := run(t.Context(), name)
			if after != nil {
				after(t, o)
			}
			Emit(t, o)
		})
	}
}

// Collect runs, in the order given, each name filter admits and returns
// the outcomes. When ctx ends it stops and returns what ran and ctx's
// error.
func Collect(ctx context.Context, names, filter []string, run func(ctx context.Context, name string) Outcome) ([]Named, error) {
	var out []Named
	for _, name := range names {
		if !Selects(filter, name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, Named{Name: name, Outcome: run(ctx, name)})
	}
	return out, nil
}

// Verdict is how one case a twin must fail fared on the twin.
type Verdict int

// The verdicts.
const (
	// Rejected: the case failed on the twin, as it must.
	Rejected Verdict = iota
	// Missed: the case passed on the twin.
	Missed
	// NotApplicable: the case skipped itself on the twin.
	NotApplicable
	// NotRun: the case is not in the twin's results.
	NotRun
)

// Judge gives the verdict for each case in caughtBy, in order, from a
// twin's outcomes.
func Judge(caughtBy []string, results []Named) []Verdict {
	out := make([]Verdict, len(caughtBy))
	for i, name := range caughtBy {
		j := slices.IndexFunc(results, func(r Named) bool { return r.Name == name })
		switch {
		case j < 0:
			out[i] = NotRun
		case results[j].Failed():
			out[i] = Rejected
		case results[j].Skipped:
			out[i] = NotApplicable
		default:
			out[i] = Missed
		}
	}
	return out
}

// Coverage is how a suite's cases stand against its negative twins.
type Coverage struct {
	// Missing are the cases no twin names and no exception excuses (an
	// exception without a reason excuses nothing).
	Missing []string
	// Stale are exceptions for a case a twin now names, or for no case
	// of the suite.
	Stale []string
	// Unknown are the names twins declare that are no case of the suite.
	Unknown []string
}

// OK reports whether every case has a twin or a reasoned exception, and
// every declaration names a case.
func (c Coverage) OK() bool { return len(c.Missing)+len(c.Stale)+len(c.Unknown) == 0 }

// TwinCoverage checks the project's rule that every case has a negative
// twin: cases are the suite's case names, caughtBy the cases each twin
// declares it must fail, and exceptions the cases that have no twin, each
// with the reason why. The lists it returns are in the order of cases
// (Unknown and the unknown part of Stale sorted).
func TwinCoverage(cases []string, caughtBy [][]string, exceptions map[string]string) Coverage {
	var cov Coverage
	known := map[string]bool{}
	for _, name := range cases {
		known[name] = true
	}
	covered := map[string]bool{}
	for _, names := range caughtBy {
		for _, name := range names {
			covered[name] = true
			if !known[name] && !slices.Contains(cov.Unknown, name) {
				cov.Unknown = append(cov.Unknown, name)
			}
		}
	}
	for _, name := range cases {
		reason, excused := exceptions[name]
		switch {
		case covered[name] && excused:
			cov.Stale = append(cov.Stale, name)
		case !covered[name] && strings.TrimSpace(reason) == "":
			cov.Missing = append(cov.Missing, name)
		}
	}
	var foreign []string
	for name := range exceptions {
		if !known[name] {
			foreign = append(foreign, name)
		}
	}
	slices.Sort(foreign)
	slices.Sort(cov.Unknown)
	cov.Stale = append(cov.Stale, foreign...)
	return cov
}

// CheckTwinCoverage fails t for every case without a twin or a reasoned
// exception, every stale exception and every twin declaration that names
// no case.
func CheckTwinCoverage(t testing.TB, cases []string, caughtBy [][]string, exceptions map[string]string) {
	t.Helper()
	cov := TwinCoverage(cases, caughtBy, exceptions)
	for _, name := range cov.Missing {
		t.Errorf("case %s has no negative twin: add one that the case rejects, or an exception saying why it cannot have one", name)
	}
	for _, name := range cov.Stale {
		t.Errorf("the exception for %s is stale: a twin covers it, or the suite has no such case", name)
	}
	for _, name := range cov.Unknown {
		t.Errorf("a twin declares case %s, which the suite does not have", name)
	}
}
