package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestRecordBehindTheLogMovesPastIt: an ownership record whose epoch is
// below the newest epoch of the cell's log (a mistyped repair, a record
// restored from an old copy of the bucket) must not lead a take into an
// epoch that holds another owner's files: the take goes past the newest.
func TestRecordBehindTheLogMovesPastIt(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinNode(t, s, clk, "node_a")
	cases := []struct {
		name   string
		record layout.OwnRecord
		newest uint64
		want   uint64
	}{
		{"released record, mistyped repair", layout.OwnRecord{Node: "", Epoch: 3}, 5, 6},
		{"released record one behind", layout.OwnRecord{Node: "", Epoch: 4}, 5, 6},
		{"this node's own record behind", layout.OwnRecord{Node: "node_a", Epoch: 2}, 9, 10},
		{"a dead node's record behind", layout.OwnRecord{Node: "node_gone", Epoch: 1}, 4, 5},
		{"record ahead of the log", layout.OwnRecord{Node: "", Epoch: 7}, 5, 8},
		{"record at the log's newest", layout.OwnRecord{Node: "", Epoch: 5}, 5, 6},
	}
	for i, c := range cases {
		cell := "Counter:behind" + string(rune('a'+i))
		for e := uint64(1); e <= c.newest; e += 2 {
			if _, err := s.Put(ctx, ltx.Key(cell, e, 0, 1, 1), []byte("x"), store.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Put(ctx, ltx.Key(cell, c.newest, 0, 1, 1), []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, layout.OwnKey(cell), c.record.Encode(), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		g, err := n.TryAcquire(ctx, cell)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if g.Epoch() != c.want {
			t.Errorf("%s: took epoch %d, want %d", c.name, g.Epoch(), c.want)
		}
		if r := readOwn(t, s, cell); r != (layout.OwnRecord{Node: "node_a", Epoch: c.want}) {
			t.Errorf("%s: record %+v", c.name, r)
		}
	}
}
