package cell

import (
	"context"
	"time"

	"github.com/cellb/cellb/core/durability"
)

// CurrentBookmark is a bookmark naming the cell's state after its latest
// commit (Durable Objects' storage.getCurrentBookmark()): on the LTX log,
// the epoch and TXID of that commit (durability.Bookmark, whose text sorts
// in commit order across epochs). It first waits, as Sync does, for every
// commit made before it to be durable, so called with the handler's
// context it ends the turn (its writes commit and are included; inside
// SQL.Transaction nothing commits, so the transaction's own writes are
// not). A cell
// that has committed nothing in this activation is named by the newest
// state its log restored, or the bucket holds (the zero bookmark for a
// cell never written). With a node log, the state named is made the end
// of a file in the cell's prefix first (one PUT, durability.
// BookmarkPinner), so the bookmark restores exactly.
//
// A cell whose log keeps no point-in-time history (every durability mode
// but the LTX log) gets a *durability.NoBookmarksError.
func (s *State) CurrentBookmark(ctx context.Context) (string, error) {
	inst := s.inst
	bm, ok := inst.db.logs.(durability.Bookmarks)
	if !ok {
		return "", &durability.NoBookmarksError{Cell: inst.key}
	}
	if err := s.Sync(ctx); err != nil {
		return "", err
	}
	inst.mu.Lock()
	cl := inst.db.log
	inst.mu.Unlock()
	var b durability.Bookmark
	known := false
	switch db := cl.(type) {
	case durability.BookmarkPinner:
		// It may write (a node log's rows up to the state, as a file of
		// their own), so not under inst.mu.
		var err error
		if b, known, err = db.PinDurableBookmark(ctx); err != nil {
			return "", err
		}
	case durability.DurableBookmarker:
		b, known = db.DurableBookmark()
	}
	if !known {
		var err error
		if b, err = bm.NewestBookmark(ctx, inst.key); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// BookmarkForTime is the bookmark of the cell's newest state committed at
// or before t (Durable Objects' storage.getBookmarkForTime()), from the
// commit times the LTX log keeps in the bucket; only states a restore can
// reach are named (the end of a group commit or of a compacted file).
// A t before the oldest state kept is a *durability.BookmarkTooOldError;
// a cell whose log keeps no point-in-time history gets a
// *durability.NoBookmarksError. It reads the bucket and does not wait for
// the cell's pending commits. With a node log the state it names may be a
// row still in a bundle: it is made the end of a file in the cell's
// prefix first (one PUT), as CurrentBookmark's is.
func (s *State) BookmarkForTime(ctx context.Context, t time.Time) (string, error) {
	inst := s.inst
	bm, ok := inst.db.logs.(durability.Bookmarks)
	if !ok {
		return "", &durability.NoBookmarksError{Cell: inst.key}
	}
	find := func(ctx context.Context) (durability.Bookmark, error) {
		return bm.BookmarkForTime(ctx, inst.key, t)
	}
	inst.mu.Lock()
	cl := inst.db.log
	inst.mu.Unlock()
	var b durability.Bookmark
	var err error
	if p, ok := cl.(durability.BookmarkPinner); ok {
		// The answer may be a row of the cell's node log still in a
		// bundle: it is made a file end first.
		b, err = p.PinBookmark(ctx, find)
	} else {
		b, err = find(ctx)
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}
