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
// cell never written).
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
	if p, ok := cl.(durability.BookmarkPinner); ok {
		// With the node log: the bookmark's row is kept the end of a
		// tiered file (it may wait for a tiering in flight).
		b, known = p.PinnedDurableBookmark()
	} else if db, ok := cl.(durability.DurableBookmarker); ok {
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
// the cell's pending commits.
func (s *State) BookmarkForTime(ctx context.Context, t time.Time) (string, error) {
	inst := s.inst
	bm, ok := inst.db.logs.(durability.Bookmarks)
	if !ok {
		return "", &durability.NoBookmarksError{Cell: inst.key}
	}
	b, err := bm.BookmarkForTime(ctx, inst.key, t)
	if err != nil {
		return "", err
	}
	return b.String(), nil
}
