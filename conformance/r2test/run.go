// Package r2test is the conformance suite of the R2 binding (core/r2): it
// runs a binding over a Store (the Harness) and checks the R2 operations and celld's
// storage format (celld-bucket-format.md §4.7) by reading the store
// directly. Every adapter's tests run it against its real server (see
// docs/conformance.md); the twins in this package are bindings with one
// flaw each, which the suite is shown to reject.
package r2test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

// Binding is what the suite checks: the operations of *r2.Bucket.
type Binding interface {
	Head(ctx context.Context, key string) (*r2.Object, error)
	Get(ctx context.Context, key string, opts r2.GetOptions) (*r2.ObjectBody, error)
	Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error)
	Delete(ctx context.Context, keys ...string) error
	List(ctx context.Context, opts r2.ListOptions) (*r2.Objects, error)
	CreateMultipartUpload(ctx context.Context, key string, opts r2.PutOptions) (*r2.MultipartUpload, error)
}

// Bind makes the binding under test for bucket over s.
type Bind func(s store.Store, bucket string) (Binding, error)

// Real binds core/r2's Bucket.
func Real(s store.Store, bucket string) (Binding, error) { return r2.New(s, bucket) }

// Harness is what the suite runs on: a bucket and the binding to check
// over it. It holds nothing to release.
type Harness struct {
	// Store is the bucket (any store.Store: an adapter's, memstore). Each
	// case works in an R2 bucket of its own under it and empties it
	// afterwards.
	Store store.Store
	// Bind makes the binding under test; nil means Real (core/r2).
	Bind Bind
}

func (h Harness) bind() Bind {
	if h.Bind == nil {
		return Real
	}
	return h.Bind
}

type tb interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

type testCase struct {
	name    string
	summary string
	run     func(t tb, e *env)
}

// env is one case's world: a bucket of its own, the binding and the raw
// store under it.
type env struct {
	ctx    context.Context
	s      store.Store
	b      Binding
	bucket string
	bind   Bind
}

// CaseNames lists the suite's cases in order.
func CaseNames() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.name
	}
	return out
}

func suiteCases() []suite.Case {
	out := make([]suite.Case, len(cases))
	for i, c := range cases {
		out[i] = suite.Case{Name: c.name, Summary: c.summary}
	}
	return out
}

func newEnv(ctx context.Context, s store.Store, bind Bind, name string) (*env, error) {
	var r [6]byte
	_, _ = rand.Read(r[:])
	bucket := "r2test-" + hex.EncodeToString(r[:])
	b, err := bind(s, bucket)
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", bucket, err)
	}
	return &env{ctx: ctx, s: s, b: b, bucket: bucket, bind: bind}, nil
}

// cleanup deletes everything the case left under its bucket (and staged
// multipart parts).
func (e *env) cleanup() {
	ctx := context.WithoutCancel(e.ctx)
	for _, p := range []string{layout.R2BucketPrefix(e.bucket), layout.R2MultipartPrefix(e.bucket)} {
		page, err := store.ListAll(ctx, e.s, store.ListOptions{Prefix: p})
		if err != nil {
			continue
		}
		for _, o := range page.Objects {
			_ = e.s.Delete(ctx, o.Key)
		}
	}
}

// Run runs every case as a subtest of t on h, through the shared runner
// (a case's Fatalf ends only that case, a panic fails only that case).
func Run(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	if h.Store == nil {
		t.Fatal("r2test: Harness.Store is nil")
	}
	cfg := suite.NewConfig(opts)
	lim := suite.LimitsFor(cfg, 0)
	suite.Subtests(t, suiteCases(), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(c.Name), lim, true)
	}, nil)
}

// RunReport runs every case without a *testing.T and reports what each
// found (a panicking case fails). It fails on a harness without a store,
// and with ctx's error when ctx ends before every case ran (those not run
// are skipped).
func RunReport(ctx context.Context, h Harness, opts ...suite.Option) (suite.Report, error) {
	rep := suite.Report{Suite: "r2test"}
	if h.Store == nil {
		rep.SetupError = "Harness.Store is nil"
		return rep, errors.New("r2test: " + rep.SetupError)
	}
	cfg := suite.NewConfig(opts)
	rep.Notes = cfg.Notes(suiteCases())
	lim := suite.LimitsFor(cfg, 0)
	var err error
	rep.Cases, err = suite.Collect(ctx, suiteCases(), cfg, func(ctx context.Context, c suite.Case) suite.Outcome {
		return runCase(ctx, h, caseNamed(c.Name), lim, false)
	})
	return rep, err
}

// runCase runs c with the shared runner in a bucket of its own, emptied
// afterwards whichever way the case ends.
func runCase(ctx context.Context, h Harness, c testCase, lim suite.Limits, stack bool) suite.Outcome {
	return suite.RunCase(ctx, lim, stack, func(ctx context.Context, rec *suite.Recorder) {
		e, err := newEnv(ctx, h.Store, h.bind(), c.name)
		if err != nil {
			rec.Fatalf("%v", err)
		}
		defer e.cleanup()
		c.run(rec, e)
	})
}

func caseNamed(name string) testCase {
	return cases[slices.IndexFunc(cases, func(c testCase) bool { return c.name == name })]
}
