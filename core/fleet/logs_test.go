package fleet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// A missing own.json next to a cell's log is refused whichever durability
// mode wrote the log, naming the newest epoch across all of them; the
// repair the message names then lets the next take restore.
func TestLostRecordRefusalInEveryLog(t *testing.T) {
	const cell = "Counter:lost"
	type object struct {
		key  string
		what string
	}
	ltxAt := func(e uint64) object { return object{ltx.Key(cell, e, 0, 1, 1), "LTX"} }
	csAt := func(e uint64) object { return object{changeset.Key(cell, e, 1, 1, true), "a changeset log"} }
	bkAt := func(e uint64) object { return object{backup.Key(cell, e, 1), "backups"} }
	cases := []struct {
		name    string
		objects []object
		newest  object // the object the message must name
		epoch   uint64
	}{
		{"ltx", []object{ltxAt(3)}, ltxAt(3), 3},
		{"changeset", []object{csAt(3)}, csAt(3), 3},
		{"backup", []object{bkAt(3)}, bkAt(3), 3},
		{"changeset newer than ltx", []object{ltxAt(2), csAt(5)}, csAt(5), 5},
		{"backup newest of three", []object{ltxAt(4), csAt(6), bkAt(7), bkAt(2)}, bkAt(7), 7},
		{"ltx newest", []object{ltxAt(9), bkAt(8)}, ltxAt(9), 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := memstore.New()
			clk := clock.NewFake(time.UnixMilli(1_000_000))
			n := joinNode(t, s, clk, "node_a")
			for _, o := range tc.objects {
				if _, err := s.Put(ctx, o.key, []byte("x"), store.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := n.TryAcquire(ctx, cell)
			var rl *lease.RecordLostError
			if !errors.As(err, &rl) {
				t.Fatalf("a cell whose log is %s was taken without its record: %v", tc.newest.what, err)
			}
			want := fmt.Sprintf(`ownership record lost: cells/%s/own.json is missing, but the bucket holds %s (%s); `+
				"repair it with `cellb repair <bucket-url> %s --apply`, which writes the released record "+
				`{"node":"","epoch":%d} create-only`,
				cell, tc.newest.what, tc.newest.key, cell, tc.epoch)
			if err.Error() != want {
				t.Fatalf("message\n%q\nwant\n%q", err.Error(), want)
			}
			if rl.Epoch != tc.epoch || rl.Log != tc.newest.what || rl.Newest != tc.newest.key {
				t.Fatalf("error fields %+v", rl)
			}
			if _, err := s.Get(ctx, layout.OwnKey(cell)); !store.IsNotFound(err) {
				t.Fatal("the refusal wrote a record: it must never guess")
			}
			// The repair the message names.
			if _, err := s.Put(ctx, layout.OwnKey(cell), layout.OwnRecord{Node: "", Epoch: tc.epoch}.Encode(), store.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			step(t, clk, 10*time.Second, n)
			g, err := n.TryAcquire(ctx, cell)
			if err != nil || g.Epoch() != tc.epoch+1 {
				t.Fatalf("after the repair: %v", err)
			}
			if !g.BucketWins() {
				t.Fatal("a fleet grant must say the bucket wins, so the runtime restores from the log")
			}
		})
	}
}

// Data only at epoch 0 was written without ownership (lease.None): there
// was never a record to lose, so the cell is created at epoch 1 (and the
// bucket-wins restore continues from that data).
func TestEpochZeroLogIsNoLostRecord(t *testing.T) {
	ctx := context.Background()
	for _, key := range []string{ltx.Key("C:z", 0, 0, 1, 1), changeset.Key("C:z", 0, 1, 1, true), backup.Key("C:z", 0, 1)} {
		s := memstore.New()
		n := joinNode(t, s, clock.NewFake(time.UnixMilli(1_000_000)), "node_a")
		if _, err := s.Put(ctx, key, []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		g, err := n.TryAcquire(ctx, "C:z")
		if err != nil || g.Epoch() != 1 {
			t.Fatalf("with only %s: %v", key, err)
		}
	}
}
