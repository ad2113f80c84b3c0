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
type CaseInfo = suite.Case

// Cases lists the suite's cases in the order they run, with what each
// checks and whether Quick skips it.
func Cases() []CaseInfo { return suiteCases() }

// CaseNames lists the suite's cases in the order they run.
func CaseNames() []string {
	out := make([]string, len(allCases))
	for i, c := range allCases {
		out[i] = c.name
	}
	return out
}

func suiteCases() []suite.Case {
	out := make([]suite.Case, len(allCases))
	for i, c := range allCases {
		out[i] = suite.Case{Name: c.name, Summary: c.summary, Slow: c.slow}
	}
	return out
}

// Probe runs celld's start-up probe (see store.Prober) on s.
func Probe(ctx context.Context, s store.Store) error { return store.Probe(ctx, s) }

// Run runs every case as a subtest of t, through the shared runner (a
// case's Fatalf ends only that case, a panic fails only that case). A
// case left out by suite.Skip or suite.Quick is a skipped subtest; one
// suite.Only leaves out has none. Run sets no time limit of its own
// unless suite.CaseTimeout is given (go test's -timeout bounds it). It
// closes the stores it made; h is the caller's to close.
func Run(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	cfg := newConfig(opts)
	cl, err := openClients(t.Context(), h)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer cl.close()
	for _, n := range append(cfg.weakening(), cl.notes...) { // suite.Subtests logs the rest
		t.Logf("storetest note: %s", n)
	}
	run := newRunPrefix()
	t.Logf("storetest: writing under %s", run)
	lim := suite.LimitsFor(cfg.Config, 0)
	suite.Subtests(t, suiteCases(), cfg.Config, func(ctx context.Context, c suite.Case) suite.Outcome {
		return cl.runCase(ctx, cfg, run, caseNamed(c.Name), lim, true)
	}, nil)
	if n, err := countUnder(context.WithoutCancel(t.Context()), cl.s, run); err != nil || n > 0 {
		t.Errorf("storetest: %d keys left under %s after the run (%v)", n, run, err)
	}
}

// RunReport runs every case without a *testing.T and reports the results,
// for tools that check a live bucket; each case is bounded by
// DefaultCaseTimeout unless suite.CaseTimeout says otherwise. It never
// panics because of the store: a panicking case is reported as failed. It
// fails (with Report.SetupError set) when the harness cannot make its
// stores, and with ctx's error when ctx ends before every case ran (those
// not run are skipped). It closes the stores it made; h is the caller's
// to close.
func RunReport(ctx context.Context, h Harness, opts ...suite.Option) (suite.Report, error) {
	cfg := newConfig(opts)
	rep := suite.Report{Suite: "storetest"}
	cl, err := openClients(ctx, h)
	if err != nil {
		rep.SetupError = err.Error()
		return rep, err
	}
	defer cl.close()
	run := newRunPrefix()
	rep.Prefix, rep.Notes = run, append(cfg.notes(), cl.notes...)
	lim := suite.LimitsFor(cfg.Config, DefaultCaseTimeout)
	rep.Cases, err = suite.Collect(ctx, suiteCases(), cfg.Config, func(ctx context.Context, c suite.Case) suite.Outcome {
		return cl.runCase(ctx, cfg, run, caseNamed(c.Name), lim, false)
	})
	// A write a case abandoned (a timeout, a retried request the store
	// applied late) may land after the case's cleanup: sweep the run's
	// directory once more, so the bucket is left as it was found.
	sweep(context.WithoutCancel(ctx), cl.s, run)
	if n, err := countUnder(context.WithoutCancel(ctx), cl.s, run); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("could not check for keys left under %s: %v", run, err))
	} else if n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d keys left under %s", n, run))
	}
	return rep, err
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

// caseNamed returns the case of that name (one of CaseNames).
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
