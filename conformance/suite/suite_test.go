package suite

import (
	"context"
	"encoding/json"
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
	if !slices.Equal(o.Failures, []string{"suite_test.go:37: first", "suite_test.go:39: second"}) || !slices.Equal(o.Log, []string{"note"}) || o.Skipped {
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
	cases := []Case{{Name: "a/1"}, {Name: "a/2", Slow: true}, {Name: "b/1"}, {Name: "b/2"}}
	var ran []string
	run := func(ctx context.Context, c Case) Outcome {
		ran = append(ran, c.Name)
		return Outcome{}
	}
	var progress []string
	cfg := NewConfig([]Option{Only("a/", "b/1"), Skip("b/1"), Progress(func(c, m string) { progress = append(progress, c+": "+m) })})
	got, err := Collect(context.Background(), cases, cfg, run)
	if err != nil || !slices.Equal(ran, []string{"a/1", "a/2"}) || len(got) != 4 {
		t.Fatalf("ran %v, got %+v, %v", ran, got, err)
	}
	for i, want := range []struct {
		status Status
		reason string
	}{{Passed, ""}, {Passed, ""}, {Skipped, "skipped by option"}, {Skipped, "not selected"}} {
		if got[i].Status != want.status || got[i].Reason != want.reason {
			t.Errorf("%s: %s %q, want %s %q", got[i].Name, got[i].Status, got[i].Reason, want.status, want.reason)
		}
	}
	if len(progress) != 4 || progress[0] != "a/1: running" || !strings.HasPrefix(progress[1], "a/1: pass in ") {
		t.Errorf("progress %q", progress)
	}
	ran = nil
	got, _ = Collect(context.Background(), cases, NewConfig([]Option{Quick()}), run)
	if r := got[1]; r.Status != Skipped || r.Reason != QuickReason || len(ran) != 3 {
		t.Errorf("quick: %+v, ran %v", r, ran)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got, err = Collect(ctx, cases, NewConfig(nil), func(ctx context.Context, c Case) Outcome {
		cancel()
		return Outcome{}
	})
	if err == nil || got[0].Status != Passed || got[1].Status != Skipped || got[1].Reason != "not run: context canceled" {
		t.Fatalf("after cancel: %+v, err %v", got, err)
	}
}

func TestConfigNotesUnknownNames(t *testing.T) {
	cfg := NewConfig([]Option{Only("a/", "zz"), Skip("b", "yy/")})
	notes := cfg.Notes([]Case{{Name: "a/1"}, {Name: "b"}})
	want := []string{`option names unknown case "yy/"`, `option names unknown case "zz"`}
	if !slices.Equal(notes, want) {
		t.Fatalf("notes %q, want %q", notes, want)
	}
}

func TestReport(t *testing.T) {
	rep := Report{Suite: "x", Cases: []CaseResult{
		{Name: "a", Status: Passed, Elapsed: time.Second},
		{Name: "b", Status: Failed, Reason: "f.go:1: broke", Failures: []string{"f.go:1: broke", "f.go:2: again"}},
		{Name: "c", Status: Skipped, Reason: "not selected"},
	}, Notes: []string{"lowered"}}
	if p, f, s := rep.Counts(); p != 1 || f != 1 || s != 1 || rep.OK() || rep.Complete() {
		t.Fatalf("counts %d %d %d ok %v complete %v", p, f, s, rep.OK(), rep.Complete())
	}
	if c, ok := rep.Case("b"); !ok || !c.Failed() || !slices.Equal(rep.Failed(), []string{"b"}) {
		t.Fatalf("Case(b) = %+v %v, Failed %v", c, ok, rep.Failed())
	}
	want := "x: 1 passed, 1 failed, 1 skipped (b)\n  b: f.go:1: broke\n  b: f.go:2: again\n  note: lowered"
	if rep.String() != want {
		t.Fatalf("String:\n%s\nwant:\n%s", rep, want)
	}
	var doc struct {
		Suite  string
		OK     bool
		Failed int
		Cases  []CaseJSON
	}
	if err := json.Unmarshal(rep.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Suite != "x" || doc.OK || doc.Failed != 1 || len(doc.Cases) != 3 || doc.Cases[0].Seconds != 1 || doc.Cases[1].Result != "fail" {
		t.Fatalf("JSON: %+v", doc)
	}
	if setup := (Report{Suite: "x", SetupError: "no bucket"}); setup.OK() || setup.Summary() != "x: setup failed: no bucket" {
		t.Fatalf("setup failure: ok %v, %q", setup.OK(), setup.Summary())
	}
}

func TestJudge(t *testing.T) {
	results := []CaseResult{
		{Name: "fails", Status: Failed},
		{Name: "passes", Status: Passed},
		{Name: "skips", Status: Skipped},
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
		checkPositive(r, -1) // line 237
		panic("boom")
	})
	want := []string{"suite_test.go:237: -1 is not positive", "panic: boom"}
	if !slices.Equal(o.Failures, want) {
		t.Fatalf("failures %q, want %q", o.Failures, want)
	}
}
