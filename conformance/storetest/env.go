package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/store"
)

// env is what a case works with.
type env struct {
	ctx    context.Context
	s, s2  store.Store // s2 is a second client, or s again
	cfg    *config
	name   string
	prefix string // every key of the case lives under it; ends with '/'
	bodies atomic.Uint64
}

// key is the full key of a case-relative name.
func (e *env) key(rel string) string { return e.prefix + rel }

// body returns a body no other write of this run has: S3 versions are
// content hashes, so equal bodies would make version checks meaningless.
func (e *env) body(label string) []byte {
	return fmt.Appendf(nil, "%s%s #%d", e.prefix, label, e.bodies.Add(1))
}

func (e *env) progressf(format string, args ...any) {
	e.cfg.Progressf(e.name, format, args...)
}

// cleanupTimeout bounds the deletion of a case's keys.
const cleanupTimeout = 5 * time.Minute

// cleanup deletes every key under the case's prefix, even after the case's
// context ended.
func (e *env) cleanup(t tb) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), cleanupTimeout)
	defer cancel()
	keys, err := keysUnder(ctx, e.s, e.prefix)
	if err != nil {
		t.Errorf("cleanup: listing %s: %v", e.prefix, err)
		return
	}
	var mu sync.Mutex
	var firstErr error
	parallel(len(keys), 16, func(i int) {
		err := e.s.Delete(ctx, keys[i])
		// Deleting is idempotent, so an ambiguous outcome is settled by
		// deleting again; the cases, not the cleanup, judge the store.
		for try := 0; try < 3 && errors.Is(err, store.ErrAmbiguous); try++ {
			err = e.s.Delete(ctx, keys[i])
		}
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	})
	if firstErr != nil {
		t.Errorf("cleanup: %v", firstErr)
	}
}

// maxPages stops listings of a store whose tokens never end.
const maxPages = 100_000

// keysUnder lists every key under prefix without judging the listing.
func keysUnder(ctx context.Context, s store.Store, prefix string) ([]string, error) {
	var keys []string
	opts := store.ListOptions{Prefix: prefix}
	seen := map[string]bool{}
	for range maxPages {
		page, err := s.List(ctx, opts)
		if err != nil {
			return keys, err
		}
		for _, o := range page.Objects {
			if !seen[o.Key] {
				seen[o.Key] = true
				keys = append(keys, o.Key)
			}
		}
		if page.NextToken == "" || page.NextToken == opts.Token {
			return keys, nil
		}
		opts.Token = page.NextToken
	}
	return keys, fmt.Errorf("listing %s did not end after %d pages", prefix, maxPages)
}

// sweep deletes every key left under prefix, ignoring errors: what it
// cannot delete, countUnder reports.
func sweep(ctx context.Context, s store.Store, prefix string) {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	keys, _ := keysUnder(ctx, s, prefix)
	parallel(len(keys), 16, func(i int) { _ = s.Delete(ctx, keys[i]) })
}

func countUnder(ctx context.Context, s store.Store, prefix string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	keys, err := keysUnder(ctx, s, prefix)
	return len(keys), err
}

// parallel calls f(0..n-1) from at most width goroutines and waits.
func parallel(n, width int, f func(i int)) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(n, width) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// goAll runs f(0..n-1) in n goroutines released together, turns a panic
// into a failure, and waits.
func goAll(t tb, n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("goroutine %d panicked: %v", i, p)
				}
			}()
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

// mustPut writes and fails the case if the write does not apply.
func mustPut(t tb, ctx context.Context, s store.Store, key string, data []byte, opts store.PutOptions) store.Version {
	t.Helper()
	v, err := s.Put(ctx, key, data, opts)
	if err != nil {
		t.Fatalf("put %s (%s): %v", key, opts.Condition, err)
	}
	if v == "" {
		t.Fatalf("put %s returned an empty version", key)
	}
	return v
}

// mustGet reads and fails the case if the read fails.
func mustGet(t tb, ctx context.Context, s store.Store, key string) *store.Object {
	t.Helper()
	o, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if o == nil {
		t.Fatalf("get %s returned neither an object nor an error", key)
	}
	return o
}

// checkBody fails the case unless o holds want (and, if set, version v).
func checkBody(t tb, what string, o *store.Object, want []byte, v store.Version) {
	t.Helper()
	if !bytes.Equal(o.Data, want) {
		t.Errorf("%s: read %s, want %s", what, quote(o.Data), quote(want))
	}
	if v != "" && o.Version != v {
		t.Errorf("%s: read version %q, want %q (the version the write returned)", what, o.Version, v)
	}
}

// quote shows a body in a failure message, shortened if long.
func quote(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%q... (%d bytes)", b[:80], len(b))
	}
	return fmt.Sprintf("%q", b)
}
