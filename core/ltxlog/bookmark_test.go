package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store/memstore"
)

// Every bookmark the log gives restores exactly the state it names: the
// durable bookmark after each commit (per-cell uploads and the node log),
// and BookmarkForTime for every second of the history, through
// compactions (which merge older points away: the bookmark for a time
// is then the end of the compacted file at or before it).
func TestBookmarksRestoreExactly(t *testing.T) {
	for _, tc := range []struct {
		withNodeLog bool
		compact     int
	}{{false, -1}, {true, -1}, {false, 5}, {true, 5}} {
		withNodeLog := tc.withNodeLog
		t.Run(fmt.Sprintf("nodelog=%v/compact=%d", withNodeLog, tc.compact), func(t *testing.T) {
			ctx := context.Background()
			s := memstore.New()
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clk := clock.NewFake(start)
			opts := Options{Logger: quiet, Store: s, Clock: clk, CompactAfter: tc.compact}
			if withNodeLog {
				rec := newNodeRecord(t, s, "node_a")
				own(t, s, cell, "node_a", 3)
				opts.NodeLog = newNodeLog(t, s, rec, nodelog.Options{})
				opts.TierAfterRows = 3
			}
			lg, _ := New(opts)
			if b, err := lg.NewestBookmark(ctx, cell); err != nil || !b.IsZero() {
				t.Fatalf("an empty bucket's newest bookmark: %v, %v; want the zero bookmark", b, err)
			}
			d := newPageDB(512, true)
			cl, err := lg.Open(ctx, openReq(cell, 3, d, false))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cl.(durability.DurableBookmarker).DurableBookmark(); ok {
				t.Fatal("a log that committed and restored nothing claims a durable bookmark")
			}
			r := rand.New(rand.NewPCG(3, 1))
			images := map[uint64][]byte{}
			for i := uint64(1); i <= 24; i++ {
				clk.Set(start.Add(time.Duration(i) * time.Second))
				d.mutate(r)
				images[i] = d.image()
				if err := wait(t, appendCommit(t, cl, d, i)); err != nil {
					t.Fatal(err)
				}
				b, ok := cl.(durability.DurableBookmarker).DurableBookmark()
				if !ok || b != (durability.Bookmark{Epoch: 3, TXID: i}) {
					t.Fatalf("after commit %d the durable bookmark is %+v (%v)", i, b, ok)
				}
			}
			if err := cl.Close(ctx, true); err != nil {
				t.Fatal(err)
			}
			if b, err := lg.NewestBookmark(ctx, cell); err != nil || b != (durability.Bookmark{Epoch: 3, TXID: 24}) {
				t.Fatalf("newest bookmark %+v, %v; want epoch 3 TXID 24", b, err)
			}
			reached := 0
			for i := uint64(1); i <= 24; i++ {
				at := start.Add(time.Duration(i)*time.Second + time.Millisecond)
				b, err := lg.BookmarkForTime(ctx, cell, at)
				var tooOld *durability.BookmarkTooOldError
				if errors.As(err, &tooOld) && tooOld.Oldest.After(at) {
					// Merged away by a compaction: the oldest state kept is
					// after it.
					continue
				}
				if err != nil || b.Epoch != 3 || b.TXID > i || b.TXID == 0 {
					t.Fatalf("bookmark for second %d: %+v, %v", i, b, err)
				}
				res, err := Restore(ctx, s, cell, RestoreOptions{TXID: ltx.TXID(b.TXID)})
				if err != nil || !bytes.Equal(res.Image, images[b.TXID]) {
					t.Fatalf("bookmark for second %d (%s) does not restore its state: %v", i, b, err)
				}
				if b.TXID == i {
					reached++
				}
			}
			switch {
			case tc.compact < 0 && !withNodeLog && reached != 24:
				t.Fatalf("without compaction or tiering %d of 24 seconds have their own bookmark, want all", reached)
			case reached == 0:
				t.Fatal("no second of the history has its own bookmark")
			}
			_, err = lg.BookmarkForTime(ctx, cell, start)
			var tooOld *durability.BookmarkTooOldError
			if !errors.As(err, &tooOld) || tooOld.Oldest.Before(start.Add(time.Second)) {
				t.Fatalf("bookmark before the first commit: %v, want a *BookmarkTooOldError", err)
			}

			// Restored under a new epoch: named by what it restored until
			// it commits.
			d2 := newPageDB(512, true)
			cl2, err := lg.Open(ctx, openReq(cell, 4, d2, true))
			if err != nil {
				t.Fatal(err)
			}
			if b, ok := cl2.(durability.DurableBookmarker).DurableBookmark(); !ok || b != (durability.Bookmark{Epoch: 3, TXID: 24}) {
				t.Fatalf("a restored log names %+v (%v), want the state it restored", b, ok)
			}
			// Two commits in epoch 4; the bookmarks of epoch 3 still
			// restore their states (RestoreOptions.Epoch).
			var newest []byte
			for i := uint64(1); i <= 2; i++ {
				d2.mutate(r)
				newest = d2.image()
				if err := wait(t, appendCommit(t, cl2, d2, i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := cl2.Close(ctx, true); err != nil {
				t.Fatal(err)
			}
			old := []uint64{24}
			if tc.compact < 0 && !withNodeLog {
				old = append(old, 1, 10)
			}
			for _, txid := range old {
				res, err := Restore(ctx, s, cell, RestoreOptions{Epoch: 3, TXID: ltx.TXID(txid)})
				if err != nil || !bytes.Equal(res.Image, images[txid]) || res.Epoch != 3 {
					t.Fatalf("restore bookmark epoch 3 TXID %d after epoch 4 began: %v", txid, err)
				}
			}
			if res, err := Restore(ctx, s, cell, RestoreOptions{Epoch: 4, TXID: 2}); err != nil || !bytes.Equal(res.Image, newest) {
				t.Fatalf("restore bookmark epoch 4 TXID 2: %v", err)
			}
			for _, e := range []uint64{2, 7} {
				_, err := Restore(ctx, s, cell, RestoreOptions{Epoch: e, TXID: 1})
				var ne *EpochNotRestorableError
				if !errors.As(err, &ne) {
					t.Fatalf("restore a bookmark of epoch %d, which the bucket never held: %v, want *EpochNotRestorableError", e, err)
				}
			}
		})
	}
}
