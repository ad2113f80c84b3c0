package tests

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
)

// epochNode is one fleet node (runtime + node lease) on a shared bucket.
type epochNode struct {
	rt   *cell.Runtime
	node *fleet.Node
	ns   *cell.Namespace[*benchCell]
}

func startEpochNode(t *testing.T, s store.Store, name string) *epochNode {
	t.Helper()
	ctx := context.Background()
	node, err := fleet.Join(ctx, fleet.Options{Store: s, Node: name, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	lg, _ := ltxlog.New(ltxlog.Options{Store: s, Logger: quietLogger()})
	rt, err := cell.New(cell.Options{ScriptName: "epochs", Driver: wasm.New(), DataDir: t.TempDir(), Log: lg, Lease: node, Logger: quietLogger(), IdleTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cell.Register(rt, "Counter", newBenchCell)
	if err != nil {
		t.Fatal(err)
	}
	return &epochNode{rt: rt, node: node, ns: ns}
}

func (n *epochNode) stop(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := n.rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.node.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// write increments the counter n times and returns its value.
func (n *epochNode) write(t *testing.T, times int) int64 {
	t.Helper()
	stub := n.ns.Get(n.ns.IDFromName("c"))
	for i := 0; i < times; i++ {
		if _, err := cell.Call(context.Background(), stub, benchWrite); err != nil {
			t.Fatal(err)
		}
	}
	v, err := cell.Call(context.Background(), stub, benchRead)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func epochKeys(t *testing.T, s store.Store, cellKey string, epoch uint64) []string {
	t.Helper()
	page, err := store.ListAll(context.Background(), s, store.ListOptions{Prefix: ltx.EpochPrefix(cellKey, epoch)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestFleetNodeRefusesACellWhoseNewestEpochLostItsSnapshot: a node taking
// a cell whose newest epoch lost its TXID-1 snapshot refuses it: it
// neither serves nor re-snapshots the state epoch 2's deltas would give on
// top of epoch 1's snapshot.
func TestFleetNodeRefusesACellWhoseNewestEpochLostItsSnapshot(t *testing.T) {
	s := memstore.New()
	a := startEpochNode(t, s, "node_a")
	if v := a.write(t, 3); v != 3 {
		t.Fatalf("a: %d", v)
	}
	cellKey := a.ns.Get(a.ns.IDFromName("c")).Key()
	a.stop(t)
	b := startEpochNode(t, s, "node_b")
	if v := b.write(t, 2); v != 5 {
		t.Fatalf("b: %d", v)
	}
	b.stop(t)
	missing := ltx.Key(cellKey, 2, 0, 1, 1)
	if err := s.Delete(context.Background(), missing); err != nil {
		t.Fatal(err)
	}
	c := startEpochNode(t, s, "node_c")
	defer c.stop(t)
	_, err := cell.Call(context.Background(), c.ns.Get(c.ns.IDFromName("c")), benchRead)
	var me *ltx.MissingSnapshotError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("call on a cell with a stitched chain: %v", err)
	}
	for e := uint64(3); e <= 4; e++ {
		if keys := epochKeys(t, s, cellKey, e); len(keys) != 0 {
			t.Fatalf("the refused node wrote %v", keys)
		}
	}
}

// TestFleetNodeMovesPastARecordBehindTheLog: own.json is put back to an
// epoch below the log's newest (a mistyped repair). The next take must not
// reuse an epoch that holds another owner's files: it moves past the
// newest, restores every acknowledged write, and leaves epoch 2 intact.
func TestFleetNodeMovesPastARecordBehindTheLog(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	a := startEpochNode(t, s, "node_a")
	a.write(t, 3)
	cellKey := a.ns.Get(a.ns.IDFromName("c")).Key()
	a.stop(t)
	b := startEpochNode(t, s, "node_b")
	if v := b.write(t, 2); v != 5 {
		t.Fatalf("b: %d", v)
	}
	b.stop(t)
	e2 := epochKeys(t, s, cellKey, 2)
	snap, err := s.Get(ctx, ltx.Key(cellKey, 2, 0, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, layout.OwnKey(cellKey), layout.OwnRecord{Node: "", Epoch: 1}.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	c := startEpochNode(t, s, "node_c")
	if v := c.write(t, 1); v != 6 {
		t.Fatalf("c read %d after one more increment, want 6: an acknowledged write was lost", v)
	}
	c.stop(t)
	if got := epochKeys(t, s, cellKey, 2); strings.Join(got, " ") != strings.Join(e2, " ") {
		t.Fatalf("epoch 2 changed: %v -> %v", e2, got)
	}
	if now, err := s.Get(ctx, ltx.Key(cellKey, 2, 0, 1, 1)); err != nil || string(now.Data) != string(snap.Data) {
		t.Fatalf("epoch 2's snapshot was replaced (%v)", err)
	}
	if len(epochKeys(t, s, cellKey, 3)) == 0 {
		t.Fatal("the new owner did not write epoch 3")
	}
	res, err := ltxlog.Restore(ctx, s, cellKey, ltxlog.RestoreOptions{})
	if err != nil || res.Epoch != 3 {
		t.Fatalf("restore: %+v %v", res, err)
	}
}
