package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// restoreCountingStore counts lists and gets.
type restoreCountingStore struct {
	store.Store
	lists, gets atomic.Int64
}

func (s *restoreCountingStore) List(ctx context.Context, o store.ListOptions) (store.ListPage, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, o)
}

func (s *restoreCountingStore) Get(ctx context.Context, key string) (*store.Object, error) {
	if layout.IsRestoreRequestKey(cell, key) {
		s.gets.Add(1)
	}
	return s.Store.Get(ctx, key)
}

// An Open that restores reads the restore request only when the listing
// of the cell's epochs (which it makes anyway) shows one: without a
// request it makes exactly the requests it made before requests existed
// (one listing of the epochs, one of the newest epoch's files); with one it
// restores the requested bookmark, and the request goes only once the new
// epoch's snapshot is stored.
func TestOpenReadsTheRestoreRequestOnlyWhenListed(t *testing.T) {
	ctx := context.Background()
	cs := &restoreCountingStore{Store: memstore.New()}
	r := rand.New(rand.NewPCG(1, 2))
	d := newPageDB(512, true)
	images := writeEpoch(t, cs, 1, d, r, 4, false)

	lg, _ := New(Options{Logger: quiet, Store: cs, CompactAfter: -1, RetryDelay: time.Millisecond})
	cs.lists.Store(0)
	d2 := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 2, d2, true))
	if err != nil {
		t.Fatal(err)
	}
	if n, g := cs.lists.Load(), cs.gets.Load(); n != 2 || g != 0 {
		t.Fatalf("an Open without a request made %d listings and read the request %d times, want 2 and 0", n, g)
	}
	// The cell asks for the state after epoch 1's second commit.
	b := durability.Bookmark{Epoch: 1, TXID: 2}
	undo, err := cl.(durability.NextSessionRestorer).RequestRestore(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if undo != (durability.Bookmark{Epoch: 1, TXID: 4}) {
		t.Fatalf("undo = %v, want the state Open restored, 1/4", undo)
	}
	cl.Close(ctx, true)

	cs.lists.Store(0)
	d3 := newPageDB(512, true)
	cl, err = lg.Open(ctx, openReq(cell, 3, d3, true))
	if err != nil {
		t.Fatal(err)
	}
	if g := cs.gets.Load(); g != 1 {
		t.Fatalf("an Open with a request read it %d times, want 1", g)
	}
	if !bytes.Equal(d3.image(), images[1]) {
		t.Fatal("the Open did not restore the requested bookmark")
	}
	rr := cl.(durability.RestoreRequestedOpen)
	if got, ok := rr.RestoredFromRequest(); !ok || got != b {
		t.Fatalf("RestoredFromRequest = %v, %v", got, ok)
	}
	if keys := listKeys(t, cs, layout.RestoreRequestKey(cell)); len(keys) != 1 {
		t.Fatal("the request went before the new epoch's snapshot was stored")
	}
	d3.mutate(r)
	if err := wait(t, appendCommit(t, cl, d3, 1)); err != nil {
		t.Fatal(err)
	}
	if keys := listKeys(t, cs, layout.RestoreRequestKey(cell)); len(keys) != 0 {
		t.Fatal("the request is still there once the new epoch's snapshot is durable")
	}
	if err := rr.RestoreSettled(ctx); err != nil {
		t.Fatalf("RestoreSettled: %v", err)
	}
	cl.Close(ctx, true)
}

// Requests the log refuses: under epoch 0, a bookmark after the current
// state, one of an epoch the bucket never held.
func TestRequestRestoreRefusals(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	r := rand.New(rand.NewPCG(3, 4))
	writeEpoch(t, s, 1, newPageDB(512, true), r, 3, false)
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: -1, RetryDelay: time.Millisecond})
	cl0, err := lg.Open(ctx, openReq(cell, 0, newPageDB(512, true), false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl0.Close(ctx, false)
	var ne *durability.RestoreNeedsEpochError
	if _, err := cl0.(durability.NextSessionRestorer).RequestRestore(ctx, durability.Bookmark{Epoch: 1, TXID: 1}, nil); !errors.As(err, &ne) {
		t.Fatalf("under epoch 0: %v", err)
	}
	cl, err := lg.Open(ctx, openReq(cell, 2, newPageDB(512, true), true))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, false)
	nr := cl.(durability.NextSessionRestorer)
	var fut *durability.BookmarkInFutureError
	if _, err := nr.RequestRestore(ctx, durability.Bookmark{Epoch: 1, TXID: 4}, nil); !errors.As(err, &fut) {
		t.Fatalf("a bookmark after the current state: %v", err)
	}
	if err := CheckBookmark(ctx, s, cell, durability.Bookmark{Epoch: 1, TXID: 3}); err != nil {
		t.Fatalf("the newest file end: %v", err)
	}
	var bnr *durability.BookmarkNotRestorableError
	if err := CheckBookmark(ctx, s, cell, durability.Bookmark{Epoch: 5, TXID: 1}); !errors.As(err, &bnr) || !strings.Contains(err.Error(), "epoch") {
		t.Fatalf("an epoch the bucket never held: %v", err)
	}
	if keys := listKeys(t, s, layout.RestoreRequestKey(cell)); len(keys) != 0 {
		t.Fatal("a refused request was recorded")
	}
}

// With the node log and no retention window (which keeps every row a file
// of its own), a request pins its bookmark and undo when their rows
// still wait to be tiered: tiering then ends a file at each, so after the
// session closes (every row tiered) both restore exactly from the cell's
// prefix, and the next session restores the bookmark. A bookmark whose
// row was already merged into a wider file is refused at the request.
func TestNodeLogRequestPinsItsBookmarks(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rec := newNodeRecord(t, s, "node_a")
	own(t, s, cell, "node_a", 3)
	nl := newNodeLog(t, s, rec, nodelog.Options{})
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: -1, NodeLog: nl, TierAfterRows: 4, Retention: -1})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 3, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 1))
	images := map[uint64][]byte{}
	commit := func(i int) {
		d.mutate(r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
		images[uint64(i)] = d.image()
	}
	for i := 1; i <= 5; i++ { // rows 2-5 are tiered as one file
		commit(i)
	}
	tiered := func() bool {
		return len(listKeys(t, s, ltx.EpochPrefix(cell, 3))) >= 2
	}
	for deadline := time.Now().Add(5 * time.Second); !tiered(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("rows 2-5 were not tiered")
		}
	}
	nr := cl.(durability.NextSessionRestorer)
	var bnr *durability.BookmarkNotRestorableError
	if _, err := nr.RequestRestore(ctx, durability.Bookmark{Epoch: 3, TXID: 3}, nil); !errors.As(err, &bnr) {
		t.Fatalf("a bookmark merged into a tiered file: %v, want a *durability.BookmarkNotRestorableError", err)
	}
	commit(6)
	commit(7)
	b := durability.Bookmark{Epoch: 3, TXID: 6} // row 6 waits to be tiered
	undo, err := nr.RequestRestore(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if undo != (durability.Bookmark{Epoch: 3, TXID: 7}) {
		t.Fatalf("undo %v, want 3/7", undo)
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, x := range []durability.Bookmark{b, undo} {
		res, err := Restore(ctx, s, cell, RestoreOptions{Epoch: x.Epoch, TXID: ltx.TXID(x.TXID)})
		if err != nil || !bytes.Equal(res.Image, images[x.TXID]) {
			t.Fatalf("%v from the prefix alone after the close: %v", x, err)
		}
	}
	own(t, s, cell, "node_a", 4)
	d2 := newPageDB(512, true)
	cl2, err := lg.Open(ctx, openReq(cell, 4, d2, true))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close(ctx, true)
	if !bytes.Equal(d2.image(), images[6]) {
		t.Fatal("the next session did not restore the bookmark")
	}
}

// With the node log and no retention window, a bookmark given out
// (PinDurableBookmark, which State.CurrentBookmark uses) stays restorable:
// its row, still waiting to be tiered, is tiered at once as a file ending
// there (restorable from the prefix alone before the close), where
// without the pin the rows waiting would be merged into one.
func TestNodeLogBookmarkGivenOutStaysRestorable(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rec := newNodeRecord(t, s, "node_a")
	own(t, s, cell, "node_a", 3)
	nl := newNodeLog(t, s, rec, nodelog.Options{})
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: -1, NodeLog: nl, TierAfterRows: 100, Retention: -1})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 3, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 1))
	var at3 []byte
	var b durability.Bookmark
	for i := 1; i <= 6; i++ {
		d.mutate(r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			at3 = d.image()
			var ok bool
			if b, ok, err = cl.(durability.BookmarkPinner).PinDurableBookmark(ctx); err != nil || !ok || b != (durability.Bookmark{Epoch: 3, TXID: 3}) {
				t.Fatalf("bookmark after the third commit: %v %v %v", b, ok, err)
			}
			res, err := Restore(ctx, s, cell, RestoreOptions{Epoch: b.Epoch, TXID: ltx.TXID(b.TXID)})
			if err != nil || !bytes.Equal(res.Image, at3) {
				t.Fatalf("the bookmark given out, from the prefix at once: %v", err)
			}
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, s, cell, RestoreOptions{Epoch: b.Epoch, TXID: ltx.TXID(b.TXID)})
	if err != nil || !bytes.Equal(res.Image, at3) {
		t.Fatalf("the bookmark given out, from the prefix after the close: %v", err)
	}
}
