package main

import (
	"context"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestForkInTheFleet: on a fleet of two nodes, node a forks a counter it
// owns into a cell never written, from inside the cell (State.ForkTo) and
// from outside (Runtime.Fork). The destination is taken and released with
// ownership like any activation, so node b's next call activates it under
// a newer epoch, restores the copy and reads the count (KV, adopted by the
// destination); the two counters then go their own ways, and a fork into a
// written cell is refused.
func TestForkInTheFleet(t *testing.T) {
	ctx := context.Background()
	bucket := memstore.New()
	dir := shortDir(t)
	a := startTallyNode(t, bucket, dir)
	b := startTallyNode(t, bucket, dir)
	for range 3 {
		if r := do(t, "POST", a.url+"/tally/src"); r.status != 200 || r.node != a.h.Node() {
			t.Fatalf("%+v", r)
		}
	}
	ns := a.app.ns
	key := func(name string) string { return ns.Key(ns.IDFromName(name)) }
	at, err := cell.Call(ctx, ns.Get(ns.IDFromName("src")), func(ctx context.Context, tl *Tally) (string, error) {
		return tl.st.ForkTo(ctx, key("inside"), "")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.h.Runtime().Fork(ctx, key("src"), key("outside"), at); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"inside", "outside"} {
		own := readOwn(t, bucket, key(name))
		if own.Node != "" || own.Epoch == 0 {
			t.Fatalf("%s after the fork: own.json %+v, want released at the fork's epoch", name, own)
		}
		r := do(t, "GET", b.url+"/tally/"+name)
		if r.status != 200 || r.value != 3 {
			t.Fatalf("GET %s through node b: %+v, want 3", name, r)
		}
		if next := readOwn(t, bucket, key(name)); next.Node == "" || next.Epoch <= own.Epoch {
			t.Fatalf("%s after its activation: own.json %+v, want an owner above epoch %d", name, next, own.Epoch)
		}
	}
	if r := do(t, "POST", b.url+"/tally/inside"); r.status != 200 || r.value != 4 {
		t.Fatalf("POST to the fork: %+v, want 4", r)
	}
	if r := do(t, "GET", a.url+"/tally/src"); r.status != 200 || r.value != 3 {
		t.Fatalf("the source after its fork wrote: %+v, want 3", r)
	}
	var written *durability.ForkDestinationWrittenError
	if _, err := a.h.Runtime().Fork(ctx, key("src"), key("inside"), ""); !errors.As(err, &written) {
		t.Fatalf("fork into a written cell: %v, want *durability.ForkDestinationWrittenError", err)
	}
}

func readOwn(t *testing.T, s store.Store, cell string) layout.OwnRecord {
	t.Helper()
	o, err := s.Get(context.Background(), layout.OwnKey(cell))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := layout.DecodeOwnRecord(layout.OwnKey(cell), o.Data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
