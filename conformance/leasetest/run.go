package leasetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
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
		rt := &reportT{}
		func() {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil && r != errStop {
						rt.fail(fmt.Sprintf("panic: %v", r))
					}
				}()
				c.run(rt, ctx, h)
			}()
			wg.Wait()
		}()
		rep.Results = append(rep.Results, Result{Case: c.name, Passed: !rt.failed, Skipped: rt.skipped, Message: rt.msg})
	}
	return rep
}

type stop struct{}

var errStop = stop{}

type reportT struct {
	mu      sync.Mutex
	failed  bool
	skipped bool
	msg     string
}

func (r *reportT) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failed {
		r.msg = msg
	}
	r.failed = true
}

func (r *reportT) Helper() {}
func (r *reportT) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	panic(errStop)
}
func (r *reportT) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *reportT) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	r.mu.Unlock()
	panic(errStop)
}
