// Package suite is the one shape of CellB's conformance suites
// (storetest, r2test, leasetest, drivertest, celltest) and the runner they
// share. Every suite has a Harness of its own (what it runs on) and the
// same functions on top of this package:
//
//	Run(t *testing.T, h Harness, opts ...suite.Option)
//	RunReport(ctx context.Context, h Harness, opts ...suite.Option) (suite.Report, error)
//	CaseNames() []string
//	Twins() []suite.Twin[Harness]
//	RunTwins(t *testing.T, h Harness, opts ...suite.Option)
//
// with one Report, the common Options (Only, Skip, Quick, CaseTimeout,
// Progress) and one Twin description. The runner runs one case with or
// without a *testing.T (a Recorder stands in for it: Fatalf and Skipf end
// the case's goroutine as testing.T's do, a panic is a failure of that
// case, a failure names the case's file and line), optionally within a
// time limit, and judges a negative twin's run.
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
