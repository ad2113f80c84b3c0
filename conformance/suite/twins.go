package suite

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Twin is a negative twin of a suite: a variant of its harness H with one
// deliberate flaw, which the cases in CaughtBy must each reject. A suite
// whose cases passed a twin would be a broken suite; RunTwins shows they
// do not.
type Twin[H any] struct {
	// Name says what is broken ("ignores-if-match").
	Name string
	// Flaw says how, in a sentence, when the suite gives one.
	Flaw string
	// Wrap builds the broken harness around a working one.
	Wrap func(H) H
	// Applies, when set, reports whether the flaw can show on h (a page
	// capture fault needs a driver that captures pages).
	Applies func(h H) bool
	// CaughtBy are the cases that must each fail on the twin.
	CaughtBy []string
}

// ReportFunc is a suite's RunReport.
type ReportFunc[H any] func(ctx context.Context, h H, opts ...Option) (Report, error)

// CaughtBy lists each twin's CaughtBy, for CheckTwinCoverage.
func CaughtBy[H any](twins []Twin[H]) [][]string {
	out := make([][]string, len(twins))
	for i, tw := range twins {
		out[i] = tw.CaughtBy
	}
	return out
}

// RunTwins shows that a suite rejects every twin that applies to h. It
// first runs the cases the twins name on h itself: a case that fails
// there proves nothing when it fails on a twin, so that fails t, and the
// twins it concerns are skipped as inconclusive. Then, as subtest
// "twin/<name>" of each twin, it runs the twin's CaughtBy cases on
// Wrap(h) and fails unless each fails; a case that skips itself on the
// twin (a capability h lacks) is logged, and a twin every case of which
// skips is skipped. A twin harness with a Close() error method is closed
// after its run; h itself is the caller's. opts go to every run.
func RunTwins[H any](t *testing.T, h H, twins []Twin[H], report ReportFunc[H], opts ...Option) {
	t.Helper()
	var apply []Twin[H]
	var needed []string
	for _, tw := range twins {
		if tw.Applies != nil && !tw.Applies(h) {
			continue
		}
		apply = append(apply, tw)
		for _, c := range tw.CaughtBy {
			if !slices.Contains(needed, c) {
				needed = append(needed, c)
			}
		}
	}
	if len(apply) == 0 {
		t.Skip("no twin applies to this harness")
	}
	baseline, err := report(t.Context(), h, append(slices.Clone(opts), Only(needed...))...)
	if err != nil {
		t.Fatalf("the run on the harness itself: %v", err)
	}
	broken := baseline.Failed()
	if len(broken) > 0 {
		t.Errorf("the harness itself fails cases the twins are checked against, so their rejection proves nothing there:\n%s", baseline)
	}
	for _, tw := range apply {
		t.Run("twin/"+tw.Name, func(t *testing.T) {
			for _, name := range tw.CaughtBy {
				if slices.Contains(broken, name) {
					t.Skipf("inconclusive: the harness itself fails %s", name)
				}
			}
			th := tw.Wrap(h)
			if c, ok := any(th).(interface{ Close() error }); ok {
				defer func() {
					if err := c.Close(); err != nil {
						t.Errorf("closing the twin's harness: %v", err)
					}
				}()
			}
			rep, err := report(t.Context(), th, append(slices.Clone(opts), Only(tw.CaughtBy...))...)
			if err != nil {
				t.Fatalf("the run on the twin: %v", err)
			}
			var rejected []string
			notApplicable := 0
			for i, v := range Judge(tw.CaughtBy, rep.Cases) {
				name := tw.CaughtBy[i]
				res, _ := rep.Case(name)
				switch v {
				case Rejected:
					rejected = append(rejected, name)
					t.Logf("rejected by %s: %s", name, firstLine(res.Reason))
				case NotApplicable:
					notApplicable++
					t.Logf("case %s does not apply here: %s", name, res.Reason)
				case Missed:
					t.Errorf("twin %s passed case %s, which must reject it (%s)", tw.Name, name, rep.Summary())
				case NotRun:
					t.Errorf("twin %s: case %s did not run: the suite has no such case", tw.Name, name)
				}
			}
			if notApplicable == len(tw.CaughtBy) {
				t.Skipf("not applicable: every case that catches %s skips itself here", tw.Name)
			}
		})
	}
}

// ExpectRejected runs the named cases on h (usually a broken harness) and
// fails t unless every one of them fails: one that passes, skips itself
// or does not exist fails t. It logs why each rejected h.
func ExpectRejected[H any](t *testing.T, h H, report ReportFunc[H], cases ...string) {
	t.Helper()
	if len(cases) == 0 {
		t.Fatal("ExpectRejected needs the names of the cases that must fail")
	}
	rep, err := report(t.Context(), h, Only(cases...))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range Judge(cases, rep.Cases) {
		name := cases[i]
		res, _ := rep.Case(name)
		switch v {
		case NotRun:
			t.Errorf("case %s did not run: the suite has no such case", name)
		case NotApplicable:
			t.Errorf("case %s was skipped (%s), so it cannot reject it", name, res.Reason)
		case Missed:
			t.Errorf("case %s passed; the suite failed to reject it (%s)", name, rep.Summary())
		default:
			t.Logf("rejected by %s: %s", name, firstLine(res.Reason))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Verdict is how one case a twin must fail fared on the twin.
type Verdict int

// The verdicts.
const (
	// Rejected: the case failed on the twin, as it must.
	Rejected Verdict = iota
	// Missed: the case passed on the twin.
	Missed
	// NotApplicable: the case was skipped on the twin.
	NotApplicable
	// NotRun: the case is not in the twin's results.
	NotRun
)

// Judge gives the verdict for each case in caughtBy, in order, from a
// twin's results.
func Judge(caughtBy []string, results []CaseResult) []Verdict {
	out := make([]Verdict, len(caughtBy))
	for i, name := range caughtBy {
		j := slices.IndexFunc(results, func(r CaseResult) bool { return r.Name == name })
		switch {
		case j < 0:
			out[i] = NotRun
		case results[j].Failed():
			out[i] = Rejected
		case results[j].Skipped():
			out[i] = NotApplicable
		default:
			out[i] = Missed
		}
	}
	return out
}
