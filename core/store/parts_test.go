package store_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/core/store"
)

// TestUploadParts: every part is sent once with its index, never more
// than concurrency at a time; a body failure and too many parts are
// BodyFailures; an upload's failure stops the rest.
func TestUploadParts(t *testing.T) {
	ctx := t.Context()
	data := make([]byte, 100)
	for i := range data {
		data[i] = byte(i)
	}
	var inFlight, most atomic.Int32
	var mu sync.Mutex
	got := map[int][]byte{}
	n, err := store.UploadParts(ctx, store.ChunksOf(data, 7, nil), 3, 100, func(ctx context.Context, i int, part []byte) error {
		now := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		mu.Lock()
		got[i] = part
		mu.Unlock()
		return nil
	})
	if err != nil || n != 15 || len(got) != 15 {
		t.Fatalf("%d parts, %d uploaded, %v; want 15", n, len(got), err)
	}
	for i := range n {
		if want := data[i*7 : min(i*7+7, 100)]; string(got[i]) != string(want) {
			t.Fatalf("part %d is %v, want %v", i, got[i], want)
		}
	}
	if most.Load() > 3 {
		t.Fatalf("%d uploads at once, want at most 3", most.Load())
	}

	boom := errors.New("boom")
	failing := func() store.Chunks {
		i := 0
		return func() ([]byte, error) {
			if i++; i > 2 {
				return nil, boom
			}
			return []byte("x"), nil
		}
	}
	var bf store.BodyFailure
	if _, err := store.UploadParts(ctx, failing(), 2, 100, func(context.Context, int, []byte) error { return nil }); !errors.As(err, &bf) || !errors.Is(err, boom) {
		t.Fatalf("a failing body: %v, want a BodyFailure with its error", err)
	}
	if _, err := store.UploadParts(ctx, store.ChunksOf(data, 10, nil), 2, 5, func(context.Context, int, []byte) error { return nil }); !errors.As(err, &bf) {
		t.Fatalf("too many parts: %v, want a BodyFailure", err)
	}
	var calls atomic.Int32
	_, err = store.UploadParts(ctx, store.ChunksOf(make([]byte, 1000), 1, nil), 1, 10000, func(ctx context.Context, i int, part []byte) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return ctx.Err()
	})
	if !errors.Is(err, boom) || errors.As(err, &bf) || calls.Load() > 5 {
		t.Fatalf("a failed upload: %v after %d calls; want part 3's error and a stop", err, calls.Load())
	}
	if _, err := store.UploadParts(ctx, func() ([]byte, error) { return nil, io.EOF }, 2, 10, nil); err != nil {
		t.Fatalf("an empty body: %v", err)
	}
}
