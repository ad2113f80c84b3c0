package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestNilProviderRecordsNothing: without a MeterProvider every set is nil,
// every recording method is a no-op on it, and the bucket is not wrapped.
func TestNilProviderRecordsNothing(t *testing.T) {
	c, err := NewCell(nil)
	if c != nil || err != nil {
		t.Fatalf("NewCell(nil) = %v, %v", c, err)
	}
	f, err := NewFleet(nil)
	if f != nil || err != nil {
		t.Fatalf("NewFleet(nil) = %v, %v", f, err)
	}
	w, err := NewWake(nil)
	if w != nil || err != nil {
		t.Fatalf("NewWake(nil) = %v, %v", w, err)
	}
	ctx := context.Background()
	c.Turn(ctx, "C", OutcomeOK)
	c.Commit(ctx, "C")
	c.DurableWait(ctx, "C", time.Second, nil)
	c.Activation(ctx, "C", time.Second, OutcomeOK)
	c.Evicted(ctx, "C", EvictIdle)
	stop, err := c.ObserveOpen(func() int { return 1 })
	if err != nil || stop() != nil {
		t.Fatal(err)
	}
	stop, err = c.ObserveWebSockets(func() int { return 1 })
	if err != nil || stop() != nil {
		t.Fatal(err)
	}
	f.Renewal(RenewalOK)
	f.SelfFence("late")
	w.Poll(ctx, RoleOwner, nil)
	s := memstore.New()
	if got, err := InstrumentStore(nil, s); got != store.Store(s) || err != nil {
		t.Fatalf("InstrumentStore(nil, s) = %v, %v; want s itself", got, err)
	}
}

// TestStoreOutcome names each kind of bucket error.
func TestStoreOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{store.NotFound("get", "k"), "not_found"},
		{store.PreconditionFailed("put", "k"), "precondition_failed"},
		{store.Ambiguous("put", "k", errors.New("reset")), "ambiguous"},
		{&store.OpError{Op: "get", Key: "k", Err: context.Canceled}, "canceled"},
		{&store.OpError{Op: "get", Key: "k", Err: context.DeadlineExceeded}, "canceled"},
		{errors.New("boom"), "error"},
	} {
		if got := StoreOutcome(c.err); got != c.want {
			t.Errorf("StoreOutcome(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
