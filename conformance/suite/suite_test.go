package suite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSelects(t *testing.T) {
	for _, c := range []struct {
		filter []string
		name   string
		want   bool
	}{
		{nil, "capture/workload", true},
		{[]string{"capture/workload"}, "capture/workload", true},
		{[]string{"capture/"}, "capture/workload", true},
		{[]string{"capture"}, "capture/workload", false},
		{[]string{"capture/work"}, "capture/workload", false},
		{[]string{"sql/", "image/round-trip"}, "image/round-trip", true},
	} {
		if got := Selects(c.filter, c.name); got != c.want {
			t.Errorf("Selects(%q, %q) = %v, want %v", c.filter, c.name, got, c.want)
		}
	}
}

// Fatalf ends the case at once, running its deferred functions; Errorf
// does not end it.
func TestRunCaseFatalEndsTheCase(t *testing.T) {
	var after, deferred bool
	o := RunCase(context.Background(), Limits{}, false, func(ctx context.Context, r *Recorder) {
		defer func() { deferred = true }()
		r.Errorf("first")
		r.Logf("note")
		r.Fatalf("second")
		after = true
	})
	if after || !deferred {
		t.Fatalf("after Fatalf: went on %v, deferred ran %v", after, deferred)
	}
	if !slices.Equal(o.Failures, []string{"suite_test.go:36: first", "suite_test.go:38: second"}) || !slices.Equal(o.Log, []string{"note"}) || o.Skipped {
		t.Fatalf("outcome %+v", o)
	}
}

// A skip ends the case; after a failure it does not hide the failure.
func TestRunCaseSkips(t *testing.T) {
	o := RunCase(context.Background(), Limits{}, false, func(ctx context.Context, r *Recorder) {
		r.Skipf("no sessions")
		t.Error("the case went on after Skipf")
	})
	if !o.Skipped || o.Reason != "no sessions" || o.Failed() {
		t.Fatalf("outcome %+v", o)
	}
	o = RunCase(context.Background(), Limits{}, false, func(ctx context.Context, r *Recorder) {
		r.Errorf("broken")
		r.Skipf("no sessions")
	})
	if o.Skipped || !o.Failed() {
		t.Fatalf("a skip after a failure: outcome %+v", o)
	}
}

func TestRunCasePanicIsAFailure(t *testing.T) {
	o := RunCase(context.Background(), Limits{}, true, func(ctx context.Context, r *Recorder) { panic("driver bug") })
	if len(o.Failures) != 1 || !strings.HasPrefix(o.Failures[0], "panic: driver bug\n") || !strings.Contains(o.Failures[0], "goroutine") {
		t.Fatalf("outcome %+v, want one failure with the panic and its stack", o)
	}
	o = RunCase(context.Background(), Limits{}, false, func(ctx context.Context, r *Recorder) { panic("driver bug") })
	if !slices.Equal(o.Failures, []string{"panic: driver bug"}) {
		t.Fatalf("outcome %+v, want the panic without a stack", o)
	}
}

// A case that outlives its timeout fails; one that also ignores its
// context's end is abandoned after the grace.
func TestRunCaseTimeout(t *testing.T) {
	o := RunCase(context.Background(), Limits{Timeout: time.Millisecond, Grace: time.Minute}, false, func(ctx context.Context, r *Recorder) {
		<-ctx.Done()
	})
	if !slices.Equal(o.Failures, []string{"did not finish within 1ms"}) {
		t.Fatalf("outcome %+v", o)
	}
	release := make(chan struct{})
	defer close(release)
	o = RunCase(context.Background(), Limits{Timeout: time.Millisecond, Grace: time.Millisecond}, false, func(ctx context.Context, r *Recorder) {
		<-release
	})
	if !slices.Equal(o.Failures, []string{"did not finish within 1ms and ignored the end of its context; abandoned"}) {
		t.Fatalf("outcome %+v", o)
	}
	// A run cancelled from outside is not the case's timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o = RunCase(ctx, Limits{Timeout: time.Hour, Grace: time.Minute}, false, func(ctx context.Context, r *Recorder) { <-ctx.Done() })
	if o.Failed() {
		t.Fatalf("outcome %+v after the run was cancelled", o)
	}
}

func TestCollectSelectsInOrderAndStops(t *testing.T) {
	names := []string{"a/1", "a/2", "b/1"}
	var ran []string
	got, err := Collect(context.Background(), names, []string{"a/"}, func(ctx context.Context, name string) Outcome {
		ran = append(ran, name)
		return Outcome{}
	})
	if err != nil || !slices.Equal(ran, []string{"a/1", "a/2"}) || len(got) != 2 || got[1].Name != "a/2" {
		t.Fatalf("ran %v, got %+v, %v", ran, got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got, err = Collect(ctx, names, nil, func(ctx context.Context, name string) Outcome {
		cancel()
		return Outcome{}
	})
	if err == nil || len(got) != 1 {
		t.Fatalf("after cancel: %d ran, err %v", len(got), err)
	}
}

func TestJudge(t *testing.T) {
	results := []Named{
		{"fails", Outcome{Failures: []string{"x"}}},
		{"passes", Outcome{}},
		{"skips", Outcome{Skipped: true, Reason: "n/a"}},
	}
	got := Judge([]string{"fails", "passes", "skips", "absent"}, results)
	if want := []Verdict{Rejected, Missed, NotApplicable, NotRun}; !slices.Equal(got, want) {
		t.Fatalf("Judge = %v, want %v", got, want)
	}
}

func TestTwinCoverage(t *testing.T) {
	cases := []string{"a", "b", "c", "d", "e"}
	caughtBy := [][]string{{"a"}, {"b", "x"}}
	exceptions := map[string]string{
		"b": "covered anyway",      // stale: a twin names it
		"c": "cannot be expressed", // excused
		"d": " ",                   // no reason: excuses nothing
		"z": "no such case",        // stale: unknown
	}
	cov := TwinCoverage(cases, caughtBy, exceptions)
	if want := []string{"d", "e"}; !slices.Equal(cov.Missing, want) {
		t.Errorf("Missing = %v, want %v", cov.Missing, want)
	}
	if want := []string{"b", "z"}; !slices.Equal(cov.Stale, want) {
		t.Errorf("Stale = %v, want %v", cov.Stale, want)
	}
	if want := []string{"x"}; !slices.Equal(cov.Unknown, want) {
		t.Errorf("Unknown = %v, want %v", cov.Unknown, want)
	}
	if cov.OK() {
		t.Error("OK() on a coverage with gaps")
	}
	if full := TwinCoverage([]string{"a", "c"}, caughtBy[:1], map[string]string{"c": "reason"}); !full.OK() {
		t.Errorf("full coverage reported as %+v", full)
	}
}

// checkPositive is a helper: its failures are the caller's.
func checkPositive(r *Recorder, n int) {
	r.Helper()
	if n <= 0 {
		r.Errorf("%d is not positive", n)
	}
}

// A failure names the case's line, skipping helpers; one the runner finds
// (a panic) names no line.
func TestFailuresNameTheCaseLine(t *testing.T) {
	o := RunCase(context.Background(), Limits{}, false, func(ctx context.Context, r *Recorder) {
		checkPositive(r, -1) // line 175
		panic("boom")
	})
	want := []string{"suite_test.go:175: -1 is not positive", "panic: boom"}
	if !slices.Equal(o.Failures, want) {
		t.Fatalf("failures %q, want %q", o.Failures, want)
	}
}
