package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestOwnedElsewhereNamesTheOwnersIncarnation: the node lease publishes the
// process's incarnation (ownership_index_generation), a node that restarts
// under the same id publishes a new one, and a refusal names the live
// owner's current incarnation, read from the lease the refusal rests on, so
// a call forwarded there is signed for that incarnation only.
func TestOwnedElsewhereNamesTheOwnersIncarnation(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	join := func(name, addr string) *Node {
		n, err := Join(ctx, Options{Store: s, Node: name, Addr: addr, Clock: clk, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Kill)
		return n
	}
	published := func(n *Node) string {
		obj, err := s.Get(ctx, layout.NodeKey(n.ID()))
		if err != nil {
			t.Fatal(err)
		}
		l, err := layout.DecodeNodeLease(layout.NodeKey(n.ID()), obj.Data)
		if err != nil {
			t.Fatal(err)
		}
		return l.OwnershipIndexGeneration
	}
	a := join("na", "10.0.0.1:9")
	b := join("nb", "10.0.0.2:9")
	if a.Generation() == "" || published(a) != a.Generation() {
		t.Fatalf("generation %q, lease publishes %q", a.Generation(), published(a))
	}
	if _, err := a.TryAcquire(ctx, "Counter:x"); err != nil {
		t.Fatal(err)
	}
	refusedBy := func() *lease.CellOwnedElsewhereError {
		t.Helper()
		_, err := b.TryAcquire(ctx, "Counter:x")
		var oe *lease.CellOwnedElsewhereError
		if !errors.As(err, &oe) {
			t.Fatalf("b took a's cell: %v", err)
		}
		return oe
	}
	if oe := refusedBy(); oe.Owner != "na" || oe.Addr != "10.0.0.1:9" || oe.Incarnation != a.Generation() {
		t.Fatalf("refusal names %s at %s incarnation %q, want na at 10.0.0.1:9 incarnation %q", oe.Owner, oe.Addr, oe.Incarnation, a.Generation())
	}
	// a restarts under the same id without releasing (its cell stays named).
	old := a.Generation()
	a.Kill()
	a2 := join("na", "10.0.0.1:9")
	if a2.Generation() == old || published(a2) != a2.Generation() {
		t.Fatalf("a restarted with incarnation %q (was %q), lease publishes %q", a2.Generation(), old, published(a2))
	}
	if oe := refusedBy(); oe.Incarnation != a2.Generation() {
		t.Fatalf("after a's restart the refusal names incarnation %q, want %q", oe.Incarnation, a2.Generation())
	}
}
