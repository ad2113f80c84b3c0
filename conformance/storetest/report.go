package storetest

import (
	"fmt"
	"strings"
	"time"
)

// Status is the outcome of one case.
type Status string

// The outcomes of a case.
const (
	Passed  Status = "pass"
	Failed  Status = "fail"
	Skipped Status = "skip"
)

// CaseResult is what one case found.
type CaseResult struct {
	Name    string
	Summary string // what the case checks
	Status  Status
	Elapsed time.Duration
	// Reason is the first failure, or why the case was skipped.
	Reason string
	// Failures holds every failure the case reported, in order.
	Failures []string
	// Log holds the case's informational messages.
	Log []string
}

// Report is the result of RunReport.
type Report struct {
	// SetupError is set when the harness could not make a store; then no
	// case ran.
	SetupError string
	Cases      []CaseResult
	// Notes lists the ways the run was weaker than the default suite
	// (lowered sizes, a single client for cross-client checks) and
	// anything it could not clean up.
	Notes []string
	// Prefix is where the run wrote its keys.
	Prefix string
}

// Counts returns how many cases passed, failed and were skipped.
func (r Report) Counts() (passed, failed, skipped int) {
	for _, c := range r.Cases {
		switch c.Status {
		case Passed:
			passed++
		case Failed:
			failed++
		case Skipped:
			skipped++
		}
	}
	return
}

// OK reports whether setup worked and no case failed.
func (r Report) OK() bool {
	_, failed, _ := r.Counts()
	return r.SetupError == "" && failed == 0
}

// Complete reports whether every case ran (none was skipped).
func (r Report) Complete() bool {
	_, _, skipped := r.Counts()
	return r.SetupError == "" && skipped == 0
}

// Case returns the result of the named case.
func (r Report) Case(name string) (CaseResult, bool) {
	for _, c := range r.Cases {
		if c.Name == name {
			return c, true
		}
	}
	return CaseResult{}, false
}

// FailedCases names the cases that failed.
func (r Report) FailedCases() []string {
	var out []string
	for _, c := range r.Cases {
		if c.Status == Failed {
			out = append(out, c.Name)
		}
	}
	return out
}

// String is a one-line summary, e.g. "16 passed, 1 failed (pagination)".
func (r Report) String() string {
	if r.SetupError != "" {
		return "setup failed: " + r.SetupError
	}
	p, f, s := r.Counts()
	out := fmt.Sprintf("%d passed, %d failed, %d skipped", p, f, s)
	if f > 0 {
		out += " (" + strings.Join(r.FailedCases(), ", ") + ")"
	}
	return out
}
