package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/cellbtest"
	"github.com/cellb/cellb/drivers/wasm"
)

// flaky's alarm fails until its third attempt and records each attempt.
type flaky struct {
	st    *cell.State
	tries *atomic.Int64
}

func (f *flaky) Alarm(ctx context.Context, info cell.AlarmInfo) error {
	n := f.tries.Add(1)
	if err := f.st.KV().Put(ctx, "tries", n); err != nil {
		return err
	}
	if info.RetryCount < 2 {
		return errors.New("not yet")
	}
	return nil
}

// The kit's Advance runs an alarm when it falls due and its retries on
// the runtime's backoff (2 s, then 4 s), and only those that fall due.
func TestCellbtestAdvanceRunsRetries(t *testing.T) {
	node := cellbtest.New(t, wasm.New())
	var tries atomic.Int64
	ns, err := cell.Register(node.Runtime, "Flaky", func(ctx context.Context, st *cell.State) (*flaky, error) {
		return &flaky{st: st, tries: &tries}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := ns.Get(ns.IDFromName("x"))
	if err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
		return st.SetAlarm(ctx, st.Now().Add(10*time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		d    time.Duration
		want int64
	}{{9 * time.Second, 0}, {time.Second, 1}, {time.Second, 1}, {time.Second, 2}, {3 * time.Second, 2}, {time.Second, 3}, {time.Hour, 3}} {
		node.Advance(step.d)
		if got := tries.Load(); got != step.want {
			t.Fatalf("at %v: %d attempts, want %d", node.Clock.Now().Sub(cellbtest.Start), got, step.want)
		}
	}
	if v, ok := cellbtest.KV(t, s, "tries"); !ok {
		t.Fatal("the attempts' KV key is missing")
	} else if n, _ := v.Any(); n != 3.0 {
		t.Fatalf("KV tries = %v, want 3", n)
	}
	if _, set := cellbtest.Alarm(t, s); set {
		t.Fatal("the alarm is still set after it succeeded")
	}
}

// hello is an http.Handler object that counts its requests in KV.
type hello struct{ st *cell.State }

func (h *hello) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var n int64
	if _, err := h.st.KV().GetInto(r.Context(), "n", &n); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	n++
	if err := h.st.KV().Put(r.Context(), "n", n); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	fmt.Fprintf(w, "hello %s #%d", r.URL.Query().Get("who"), n)
}

func TestCellbtestFetch(t *testing.T) {
	node := cellbtest.New(t, wasm.New())
	ns, err := cell.Register(node.Runtime, "Hello", func(ctx context.Context, st *cell.State) (*hello, error) { return &hello{st: st}, nil })
	if err != nil {
		t.Fatal(err)
	}
	s := ns.Get(ns.IDFromName("h"))
	for i := 1; i <= 2; i++ {
		if status, body := cellbtest.Fetch(t, s, "GET", "/?who=test", nil); status != 200 || string(body) != fmt.Sprintf("hello test #%d", i) {
			t.Fatalf("request %d: %d %q", i, status, body)
		}
	}
	if v, ok := cellbtest.KV(t, s, "n"); !ok {
		t.Fatal("KV n missing")
	} else if n, _ := v.Any(); n != 2.0 {
		t.Fatalf("KV n = %v, want 2", n)
	}
}

// tally is a class with one number in KV.
type tally struct{ st *cell.State }

// The kit's node gives every activation a new epoch, so a class's
// restore of a bookmark on its next session works as on a node: the
// restarted object (Abort) reads the bookmarked state, and the undo
// bookmark brings the later one back.
func TestCellbtestRestoreBookmark(t *testing.T) {
	node := cellbtest.New(t, wasm.New())
	ns, err := cell.Register(node.Runtime, "Tally", func(ctx context.Context, st *cell.State) (*tally, error) {
		return &tally{st: st}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := ns.Get(ns.IDFromName("x"))
	put := func(v int64) string {
		t.Helper()
		var b string
		if err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
			if err := st.KV().Put(ctx, "n", v); err != nil {
				return err
			}
			var err error
			b, err = st.CurrentBookmark(ctx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	restore := func(b string) string {
		t.Helper()
		var undo string
		if err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
			var err error
			undo, err = st.RestoreBookmarkOnNextSession(ctx, b)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// Abort ends the turn that calls it; the next call restarts.
		err := cell.Inspect(context.Background(), s, func(ctx context.Context, st *cell.State) error {
			st.Abort(ctx, "restore "+b)
			return nil
		})
		var broken *cell.BrokenObjectError
		if !errors.As(err, &broken) {
			t.Fatalf("Abort: %v", err)
		}
		return undo
	}
	want := func(n int64) {
		t.Helper()
		v, _ := cellbtest.KV(t, s, "n")
		if got, _ := v.Any(); got != float64(n) {
			t.Fatalf("n = %v, want %d", got, n)
		}
	}
	b1 := put(1)
	put(2)
	undo := restore(b1)
	want(1)
	restore(undo)
	want(2)
}
