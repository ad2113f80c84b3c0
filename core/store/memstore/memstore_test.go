package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
)

func TestConditions(t *testing.T) {
	ctx := t.Context()
	s := New()
	v1, err := s.Put(ctx, "k", []byte("one"), store.PutOptions{Condition: store.IfAbsent})
	if err != nil || v1 == "" {
		t.Fatalf("create-only on a new key: %q, %v", v1, err)
	}
	if _, err := s.Put(ctx, "k", []byte("two"), store.PutOptions{Condition: store.IfAbsent}); !store.IsPreconditionFailed(err) {
		t.Fatalf("second create-only: got %v, want precondition failed", err)
	}
	v2, err := s.Put(ctx, "k", []byte("two"), store.PutOptions{Condition: store.IfVersion(v1)})
	if err != nil || v2 == v1 {
		t.Fatalf("CAS with the current version: %q, %v", v2, err)
	}
	if _, err := s.Put(ctx, "k", []byte("three"), store.PutOptions{Condition: store.IfVersion(v1)}); !store.IsPreconditionFailed(err) {
		t.Fatalf("CAS with a stale version: got %v, want precondition failed", err)
	}
	if _, err := s.Put(ctx, "missing", []byte("x"), store.PutOptions{Condition: store.IfVersion(v2)}); !store.IsPreconditionFailed(err) {
		t.Fatalf("CAS on a missing key: got %v, want precondition failed", err)
	}
	if _, err := s.Put(ctx, "k", nil, store.PutOptions{Condition: store.Condition{Kind: 99}}); err == nil {
		t.Fatal("an unknown condition kind was accepted")
	}
	o, err := s.Get(ctx, "k")
	if err != nil || string(o.Data) != "two" || o.Version != v2 {
		t.Fatalf("Get after the failed writes: %+v, %v", o, err)
	}
	if _, err := s.Get(ctx, "missing"); !store.IsNotFound(err) {
		t.Fatalf("Get of a key never written: %v", err)
	}
}

func TestVersionChangesForEqualBodies(t *testing.T) {
	ctx := t.Context()
	s := New()
	seen := map[store.Version]bool{}
	for range 5 {
		v, err := s.Put(ctx, "same", []byte("body"), store.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] {
			t.Fatalf("version %q reused", v)
		}
		seen[v] = true
	}
}

func TestCopiesInAndOut(t *testing.T) {
	ctx := t.Context()
	s := New()
	data := []byte("abc")
	md := map[string]string{"a": "1"}
	if _, err := s.Put(ctx, "k", data, store.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	data[0] = 'X'
	md["a"] = "changed"
	o, _ := s.Get(ctx, "k")
	if string(o.Data) != "abc" || o.Metadata["a"] != "1" {
		t.Fatalf("stored object changed with the caller's slices: %q %v", o.Data, o.Metadata)
	}
	o.Data[0] = 'Y'
	o.Metadata["a"] = "changed"
	o2, _ := s.Get(ctx, "k")
	if string(o2.Data) != "abc" || o2.Metadata["a"] != "1" {
		t.Fatalf("stored object changed with a returned object: %q %v", o2.Data, o2.Metadata)
	}
	if _, err := s.Put(ctx, "empty", nil, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Get(ctx, "empty"); o.Data == nil || len(o.Data) != 0 {
		t.Fatalf("an empty body should read back as a non-nil empty slice, got %#v", o.Data)
	}
}

func TestValidation(t *testing.T) {
	ctx := t.Context()
	s := New()
	for _, key := range []string{"", "/abs", "a//b", "a/../b", "a\\b"} {
		if _, err := s.Put(ctx, key, nil, store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Get(%q): %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v, want ErrInvalidKey", key, err)
		}
	}
	if _, err := s.List(ctx, store.ListOptions{Prefix: "a//"}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("List with a bad prefix: %v", err)
	}
	if _, err := s.Put(ctx, "k", nil, store.PutOptions{Metadata: map[string]string{"Bad": "x"}}); !errors.Is(err, store.ErrInvalidMetadata) {
		t.Errorf("bad metadata: %v", err)
	}
	if _, err := s.List(ctx, store.ListOptions{Token: "!!"}); err == nil {
		t.Error("a malformed token was accepted")
	}
	if s.Len() != 0 {
		t.Fatalf("rejected calls stored %d objects", s.Len())
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s := New()
	if _, err := s.Put(ctx, "k", nil, store.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put: %v", err)
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: %v", err)
	}
	if err := s.Delete(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete: %v", err)
	}
	if _, err := s.List(ctx, store.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v", err)
	}
	if s.Len() != 0 {
		t.Fatal("a cancelled Put was applied")
	}
}

func TestModifiedUsesClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	fc := clock.NewFake(start)
	s := New(WithClock(fc))
	if _, err := s.Put(t.Context(), "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	o, _ := s.Get(t.Context(), "k")
	if !o.Modified.Equal(start) {
		t.Fatalf("Modified = %v, want %v", o.Modified, start)
	}
}

func TestDelimiterAndTokens(t *testing.T) {
	ctx := t.Context()
	s := New()
	for _, k := range []string{"a/1", "a/2", "b", "c/x/1", "c/y", "d"} {
		if _, err := s.Put(ctx, k, []byte(k), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	opts := store.ListOptions{Delimiter: "/", Limit: 1}
	for {
		p, err := s.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.Objects) + len(p.Prefixes); n != 1 {
			t.Fatalf("page of %d entries with limit 1", n)
		}
		for _, o := range p.Objects {
			got = append(got, o.Key)
		}
		got = append(got, p.Prefixes...)
		if p.NextToken == "" {
			break
		}
		opts.Token = p.NextToken
	}
	want := []string{"a/", "b", "c/", "d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestConcurrentCreateOnly(t *testing.T) {
	ctx := t.Context()
	s := New()
	for round := range 20 {
		key := fmt.Sprintf("race/%d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for g := range 8 {
			wg.Go(func() {
				_, err := s.Put(ctx, key, []byte{byte(g)}, store.PutOptions{Condition: store.IfAbsent})
				switch {
				case err == nil:
					mu.Lock()
					winners++
					mu.Unlock()
				case !store.IsPreconditionFailed(err):
					t.Errorf("loser got %v", err)
				}
			})
		}
		wg.Wait()
		if winners != 1 {
			t.Fatalf("round %d: %d winners", round, winners)
		}
	}
}

// FuzzListPages checks that following NextToken over any set of keys, with
// any limit and delimiter, yields exactly the entries a naive scan expects,
// in order, and that arbitrary tokens never crash List.
func FuzzListPages(f *testing.F) {
	f.Add([]byte("a/b\x00a/c\x00b\x00b/d/e"), "", "/", 1, "")
	f.Add([]byte("x\x00xy\x00x/y\x00x/z/w"), "x", "/", 2, "")
	f.Add([]byte("k1\x00k2\x00k3"), "", "", 0, "bm90IGEgdG9rZW4")
	f.Add([]byte("p/q\x00p-q\x00p.q"), "p", "-", 1, "cA")
	f.Fuzz(func(t *testing.T, rawKeys []byte, prefix, delim string, limit int, junkToken string) {
		ctx := t.Context()
		s := New()
		keys := map[string]bool{}
		for _, k := range bytes.Split(rawKeys, []byte{0}) {
			if store.ValidateKey(string(k)) == nil {
				keys[string(k)] = true
				if _, err := s.Put(ctx, string(k), k, store.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Arbitrary tokens may be rejected but must not crash.
		_, _ = s.List(ctx, store.ListOptions{Prefix: prefix, Delimiter: delim, Token: junkToken, Limit: limit})
		if store.ValidatePrefix(prefix) != nil {
			return
		}
		want := naiveList(keys, prefix, delim)
		var got []string
		opts := store.ListOptions{Prefix: prefix, Delimiter: delim, Limit: limit % 5}
		for pages := 0; ; pages++ {
			if pages > len(keys)+1 {
				t.Fatal("listing does not end")
			}
			p, err := s.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, mergePage(p)...)
			if p.NextToken == "" {
				break
			}
			opts.Token = p.NextToken
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("prefix %q delim %q limit %d:\n got %q\nwant %q", prefix, delim, opts.Limit, got, want)
		}
	})
}

func naiveList(keys map[string]bool, prefix, delim string) []string {
	seen := map[string]bool{}
	var out []string
	for k := range keys {
		if len(k) < len(prefix) || k[:len(prefix)] != prefix {
			continue
		}
		e := k
		if delim != "" {
			if j := bytes.Index([]byte(k[len(prefix):]), []byte(delim)); j >= 0 {
				e = k[:len(prefix)+j+len(delim)]
			}
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

func mergePage(p store.ListPage) []string {
	var out []string
	for _, o := range p.Objects {
		out = append(out, o.Key)
	}
	out = append(out, p.Prefixes...)
	slices.Sort(out)
	return out
}
