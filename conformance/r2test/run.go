// Package r2test is the conformance suite of the R2 binding (core/r2): it
// runs a binding over a Store and checks the R2 operations and celld's
// storage format (celld-bucket-format.md §4.7) by reading the store
// directly. Every adapter's tests run it against its real server (see
// docs/conformance.md); the twins in this package are bindings with one
// flaw each, which the suite is shown to reject.
package r2test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/cellb/cellb/core/layout"
	"io"
	"runtime"
	"sync"
	"testing"

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
}

// CaseNames lists the suite's cases in order.
func CaseNames() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.name
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
	return &env{ctx: ctx, s: s, b: b, bucket: bucket}, nil
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

// Run runs every case as a subtest of t, on s with the binding bind makes
// (Real for core/r2).
func Run(t *testing.T, s store.Store, bind Bind) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := newEnv(t.Context(), s, bind, c.name)
			if err != nil {
				t.Fatal(err)
			}
			defer e.cleanup()
			c.run(t, e)
		})
	}
}

// recorder is the tb of Check.
type recorder struct {
	mu       sync.Mutex
	failures []string
}

func (*recorder) Helper()             {}
func (*recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// Check runs every case without a *testing.T and returns the failures of
// each failed case (a panicking case fails).
func Check(ctx context.Context, s store.Store, bind Bind) map[string][]string {
	out := map[string][]string{}
	for _, c := range cases {
		rec := &recorder{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					rec.Errorf("panic: %v", p)
				}
			}()
			e, err := newEnv(ctx, s, bind, c.name)
			if err != nil {
				rec.Fatalf("%v", err)
			}
			defer e.cleanup()
			c.run(rec, e)
		}()
		<-done
		if len(rec.failures) > 0 {
			out[c.name] = rec.failures
		}
	}
	return out
}
