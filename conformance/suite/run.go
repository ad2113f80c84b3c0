package suite

import (
	"context"
	"testing"
	"time"
)

// RunFunc runs one case and returns what it found (usually through
// RunCase).
type RunFunc func(ctx context.Context, c Case) Outcome

// Subtests runs, as subtests of t in order, each case cfg selects (Only),
// and reports each outcome onto its subtest (Emit): a case Skip or Quick
// leaves out is a skipped subtest; a case Only leaves out has none. after,
// when set, is called with each subtest and its outcome (a suite's own
// notes, such as drivertest's seed).
func Subtests(t *testing.T, cases []Case, cfg *Config, run RunFunc, after func(t *testing.T, o Outcome)) {
	t.Helper()
	for _, n := range cfg.Notes(cases) {
		t.Logf("note: %s", n)
	}
	for _, c := range cases {
		if !cfg.Selected(c.Name) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			if reason := cfg.SkipReason(c); reason != "" {
				t.Skip(reason)
			}
			o := run(t.Context(), c)
			if after != nil {
				after(t, o)
			}
			Emit(t, o)
		})
	}
}

// Collect runs, in order, every case cfg lets run and returns a result for
// each of cases: those left out are skipped with the reason ("not
// selected", a Skip, Quick). When ctx ends, the cases not yet run are
// skipped "not run: <ctx's error>" and Collect returns ctx's error. It
// sends "running" and "<status> in <time>" to the Progress option.
func Collect(ctx context.Context, cases []Case, cfg *Config, run RunFunc) ([]CaseResult, error) {
	var out []CaseResult
	var ended error
	for _, c := range cases {
		res := CaseResult{Name: c.Name, Summary: c.Summary, Status: Skipped}
		if reason := cfg.SkipReason(c); reason != "" {
			res.Reason = reason
			out = append(out, res)
			continue
		}
		if err := ctx.Err(); err != nil {
			ended = err
			res.Reason = "not run: " + err.Error()
			out = append(out, res)
			continue
		}
		cfg.Progressf(c.Name, "running")
		start := time.Now()
		o := run(ctx, c)
		res = o.Result(c.Name, time.Since(start))
		res.Summary = c.Summary
		cfg.Progressf(c.Name, "%s in %v", res.Status, res.Elapsed.Round(time.Millisecond))
		out = append(out, res)
	}
	return out, ended
}

// abandonGrace is how long a case whose time limit passed is waited for
// before it is abandoned.
const abandonGrace = 30 * time.Second

// LimitsFor are the Limits of a case under cfg: its CaseTimeout (or def
// when none was given) and a grace of 30 s.
func LimitsFor(cfg *Config, def time.Duration) Limits {
	d := cfg.CaseTimeout(def)
	if d <= 0 {
		return Limits{}
	}
	return Limits{Timeout: d, Grace: abandonGrace}
}
