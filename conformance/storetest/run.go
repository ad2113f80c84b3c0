package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
)

// testCase is one named check of the suite.
type testCase struct {
	name    string
	summary string
	slow    bool // skipped by Quick
	run     func(t tb, e *env)
}

// CaseInfo describes a case for documentation and command-line help.
type CaseInfo struct {
	Name    string
	Summary string
	// Slow cases (the large object and contention) are skipped by Quick.
	Slow bool
}

// Cases lists the suite's cases in the order they run.
func Cases() []CaseInfo {
	out := make([]CaseInfo, len(allCases))
	for i, c := range allCases {
		out[i] = CaseInfo{Name: c.name, Summary: c.summary, Slow: c.slow}
	}
	return out
}

// Probe runs celld's start-up probe (see store.Prober) on s.
func Probe(ctx context.Context, s store.Store) error { return store.Probe(ctx, s) }

// abandonGrace is how long RunReport waits for a case to notice that its
// context ended before it gives up on the case.
const abandonGrace = 30 * time.Second

// Run runs every case as a subtest of t, through the shared runner (a
// case's Fatalf ends only that case, a panic fails only that case). A
// case left out by Skip, Only or Quick is a skipped subtest; Run sets no
// time limit of its own (go test's -timeout bounds it).
func Run(t *testing.T, h Harness, opts ...Option) {
	t.Helper()
	cfg := newConfig(opts)
	cl, err := openClients(t.Context(), h)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer cl.close()
	for _, n := range append(cfg.notes(), cl.notes...) {
		t.Logf("storetest note: %s", n)
	}
	run := newRunPrefix()
	t.Logf("storetest: writing under %s", run)
	suite.Subtests(t, caseNames(), nil, func(ctx context.Context, name string) suite.Outcome {
		if reason := cfg.skipReason(name); reason != "" {
			return suite.Outcome{Skipped: true, Reason: reason}
		}
		return cl.runCase(ctx, cfg, run, caseNamed(name), suite.Limits{}, true)
	}, nil)
	if n, err := countUnder(context.WithoutCancel(t.Context()), cl.s, run); err != nil || n > 0 {
		t.Errorf("storetest: %d keys left under %s after the run (%v)", n, run, err)
	}
}

// RunReport runs every case without a *testing.T and reports the results,
// for tools that check a live bucket. It never panics because of the
// store: a panicking case is reported as failed.
func RunReport(ctx context.Context, h Harness, opts ...Option) Report {
	cfg := newConfig(opts)
	cl, err := openClients(ctx, h)
	if err != nil {
		return Report{SetupError: err.Error()}
	}
	defer cl.close()
	run := newRunPrefix()
	rep := Report{Prefix: run, Notes: append(cfg.notes(), cl.notes...)}
	for _, tc := range allCases {
		res := CaseResult{Name: tc.name, Summary: tc.summary}
		if reason := cfg.skipReason(tc.name); reason != "" {
			res.Status, res.Reason = Skipped, reason
			rep.Cases = append(rep.Cases, res)
			continue
		}
		if err := ctx.Err(); err != nil {
			res.Status, res.Reason = Skipped, "not run: "+err.Error()
			rep.Cases = append(rep.Cases, res)
			continue
		}
		if cfg.progress != nil {
			cfg.progress(tc.name, "running")
		}
		start := time.Now()
		o := cl.runCase(ctx, cfg, run, tc, suite.Limits{Timeout: cfg.caseTimeout, Grace: abandonGrace}, false)
		res.Elapsed = time.Since(start)
		res.Failures, res.Log = o.Failures, o.Log
		res.Status = Passed
		if len(res.Failures) > 0 {
			res.Status, res.Reason = Failed, res.Failures[0]
		}
		if cfg.progress != nil {
			cfg.progress(tc.name, fmt.Sprintf("%s in %v", res.Status, res.Elapsed.Round(time.Millisecond)))
		}
		rep.Cases = append(rep.Cases, res)
	}
	// A write a case abandoned (a timeout, a retried request the store
	// applied late) may land after the case's cleanup: sweep the run's
	// directory once more, so the bucket is left as it was found.
	sweep(context.WithoutCancel(ctx), cl.s, run)
	if n, err := countUnder(context.WithoutCancel(ctx), cl.s, run); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("could not check for keys left under %s: %v", run, err))
	} else if n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d keys left under %s", n, run))
	}
	return rep
}

// runCase runs tc with the shared runner, in its own directory under run,
// removed afterwards whichever way the case ends.
func (c *clients) runCase(ctx context.Context, cfg *config, run string, tc testCase, lim suite.Limits, stack bool) suite.Outcome {
	return suite.RunCase(ctx, lim, stack, func(cctx context.Context, rec *suite.Recorder) {
		e := c.env(cctx, cfg, run, tc.name)
		defer e.cleanup(rec)
		tc.run(rec, e)
	})
}

// caseNames lists the cases' names in run order.
func caseNames() []string {
	out := make([]string, len(allCases))
	for i, c := range allCases {
		out[i] = c.name
	}
	return out
}

// caseNamed returns the case of that name (one of caseNames).
func caseNamed(name string) testCase {
	return allCases[slices.IndexFunc(allCases, func(c testCase) bool { return c.name == name })]
}

// clients are the stores the harness made for one run.
type clients struct {
	h     Harness
	s, s2 store.Store
	notes []string
}

func openClients(ctx context.Context, h Harness) (*clients, error) {
	s, err := h.MakeStore(ctx)
	if err == nil && s == nil {
		err = errors.New("the harness returned a nil store")
	}
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("making the store: %w", err)
	}
	cl := &clients{h: h, s: s, s2: s}
	sh, ok := h.(SecondClientHarness)
	if !ok {
		cl.notes = append(cl.notes, "no second client: cross-client checks used one client")
		return cl, nil
	}
	s2, err := sh.MakeSecondStore(ctx)
	if err == nil && s2 == nil {
		err = errors.New("the harness returned a nil second store")
	}
	if err != nil {
		cl.close()
		return nil, fmt.Errorf("making the second store: %w", err)
	}
	cl.s2 = s2
	if sameStore(s, s2) {
		cl.notes = append(cl.notes, "the second client is the same instance as the first: cross-client checks used one client")
	}
	return cl, nil
}

// sameStore reports whether a and b are one value, without panicking on
// store types that cannot be compared.
func sameStore(a, b store.Store) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

func (c *clients) close() {
	_ = store.Close(c.s)
	if !sameStore(c.s, c.s2) {
		_ = store.Close(c.s2)
	}
	c.h.Close()
}

func (c *clients) env(ctx context.Context, cfg *config, run, name string) *env {
	return &env{ctx: ctx, s: c.s, s2: c.s2, cfg: cfg, name: name, prefix: run + name + "/"}
}

// newRunPrefix names a fresh directory for one run, so runs on a shared
// bucket never meet.
func newRunPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("storetest/%s-%s/", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(b[:]))
}
