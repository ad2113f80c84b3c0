package suite

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Status is how one case ended.
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
	Summary string // what the case checks, when the suite says
	Status  Status
	Elapsed time.Duration
	// Reason is the first failure, or why the case was skipped.
	Reason string
	// Failures holds every failure the case reported, in order, each
	// starting with the case's file and line.
	Failures []string
	// Log holds the case's informational messages.
	Log []string
}

// Failed reports whether the case failed.
func (c CaseResult) Failed() bool { return c.Status == Failed }

// Skipped reports whether the case did not run or skipped itself.
func (c CaseResult) Skipped() bool { return c.Status == Skipped }

// Result is the CaseResult of an outcome of the named case.
func (o Outcome) Result(name string, elapsed time.Duration) CaseResult {
	r := CaseResult{Name: name, Status: Passed, Elapsed: elapsed, Failures: o.Failures, Log: o.Log}
	switch {
	case o.Failed():
		r.Status, r.Reason = Failed, o.Failures[0]
	case o.Skipped:
		r.Status, r.Reason = Skipped, o.Reason
	}
	return r
}

// Report is the result of a suite's RunReport: every case of the suite in
// run order, those that did not run as skipped with the reason.
type Report struct {
	// Suite names the suite ("storetest").
	Suite string
	// Subject names what ran, when the suite knows (a driver's name).
	Subject string
	// SetupError is set when the harness could not start; then no case
	// ran.
	SetupError string
	Cases      []CaseResult
	// Notes lists the ways the run was weaker than the default suite
	// (lowered sizes, a single client for cross-client checks, options
	// naming unknown cases) and anything it could not clean up.
	Notes []string
	// Prefix is where the run wrote its keys (storetest), else "".
	Prefix string
	// Seed fixed the run's random workloads (drivertest), else 0.
	Seed int64
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

// Failed names the cases that failed, in run order.
func (r Report) Failed() []string {
	var out []string
	for _, c := range r.Cases {
		if c.Failed() {
			out = append(out, c.Name)
		}
	}
	return out
}

// Summary is the report in one line, e.g. "storetest: 27 passed, 1
// failed, 0 skipped (pagination)".
func (r Report) Summary() string {
	head := r.Suite
	if r.Subject != "" {
		head += " " + r.Subject
	}
	if r.SetupError != "" {
		return head + ": setup failed: " + r.SetupError
	}
	p, f, s := r.Counts()
	out := fmt.Sprintf("%s: %d passed, %d failed, %d skipped", head, p, f, s)
	if f > 0 {
		out += " (" + strings.Join(r.Failed(), ", ") + ")"
	}
	if r.Seed != 0 {
		out += fmt.Sprintf(" (seed %d)", r.Seed)
	}
	return out
}

// String is the Summary line, then every failure of every case on lines
// of their own ("  <case>: <failure>"), then the notes.
func (r Report) String() string {
	var b strings.Builder
	b.WriteString(r.Summary())
	for _, c := range r.Cases {
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "\n  %s: %s", c.Name, f)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n  note: %s", n)
	}
	return b.String()
}

// reportJSON is the JSON form of a Report.
type reportJSON struct {
	Suite      string     `json:"suite"`
	Subject    string     `json:"subject,omitempty"`
	OK         bool       `json:"ok"`
	Complete   bool       `json:"complete"`
	Passed     int        `json:"passed"`
	Failed     int        `json:"failed"`
	Skipped    int        `json:"skipped"`
	SetupError string     `json:"setup_error,omitempty"`
	Prefix     string     `json:"prefix,omitempty"`
	Seed       int64      `json:"seed,omitempty"`
	Cases      []CaseJSON `json:"cases,omitempty"`
	Notes      []string   `json:"notes,omitempty"`
}

// CaseJSON is one case of a report's JSON form.
type CaseJSON struct {
	Name     string   `json:"name"`
	Summary  string   `json:"summary,omitempty"`
	Result   string   `json:"result"`
	Seconds  float64  `json:"seconds"`
	Reason   string   `json:"reason,omitempty"`
	Failures []string `json:"failures,omitempty"`
	Log      []string `json:"log,omitempty"`
}

// JSON is the case as a CaseJSON.
func (c CaseResult) JSON() CaseJSON {
	return CaseJSON{Name: c.Name, Summary: c.Summary, Result: string(c.Status), Seconds: c.Elapsed.Seconds(),
		Reason: c.Reason, Failures: c.Failures, Log: c.Log}
}

// MarshalJSON writes the report with its counts and verdicts (ok,
// complete), each case's time in seconds.
func (r Report) MarshalJSON() ([]byte, error) {
	p, f, s := r.Counts()
	out := reportJSON{Suite: r.Suite, Subject: r.Subject, OK: r.OK(), Complete: r.Complete(), Passed: p, Failed: f, Skipped: s,
		SetupError: r.SetupError, Prefix: r.Prefix, Seed: r.Seed, Notes: r.Notes}
	for _, c := range r.Cases {
		out.Cases = append(out.Cases, c.JSON())
	}
	return json.Marshal(out)
}

// JSON is the report as indented JSON (MarshalJSON's document).
func (r Report) JSON() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil { // cannot happen: the document holds strings and numbers
		panic(err)
	}
	return b
}

// Exit statuses of a tool that runs a suite and prints its report (cellb
// diagnose).
const (
	ExitOK         = 0 // every case ran and passed
	ExitFailed     = 1 // a case failed, or the suite could not start
	ExitIncomplete = 3 // every case that ran passed, but some were skipped
)

// ExitCode is the exit status a tool reporting r exits with: ExitFailed
// when setup or a case failed, ExitIncomplete when a case was skipped,
// else ExitOK.
func (r Report) ExitCode() int {
	switch {
	case !r.OK():
		return ExitFailed
	case !r.Complete():
		return ExitIncomplete
	default:
		return ExitOK
	}
}
