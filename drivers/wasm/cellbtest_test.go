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
