package celltest

import (
	"context"
	"time"

	"github.com/cellb/cellb/core/durability"
)

// BookmarkAnyTime is a log whose BookmarkForTime answers the newest state
// whatever the time asked (a log that never reads its files' commit
// times).
func BookmarkAnyTime(l durability.Log) durability.Log { return anyTimeBookmarks{l} }

type anyTimeBookmarks struct{ durability.Log }

func (l anyTimeBookmarks) NewestBookmark(ctx context.Context, cell string) (durability.Bookmark, error) {
	bm, ok := l.Log.(durability.Bookmarks)
	if !ok {
		return durability.Bookmark{}, &durability.NoBookmarksError{Cell: cell}
	}
	return bm.NewestBookmark(ctx, cell)
}

func (l anyTimeBookmarks) BookmarkForTime(ctx context.Context, cell string, _ time.Time) (durability.Bookmark, error) {
	return l.NewestBookmark(ctx, cell)
}

// StaleBookmark is a log whose cell logs name, as their newest durable
// state, the commit before it (a log that counts its snapshot off by
// one): a bookmark taken right after a write misses the write.
func StaleBookmark(l durability.Log) durability.Log { return staleBookmarks{anyTimeBookmarks{l}} }

type staleBookmarks struct{ anyTimeBookmarks }

func (l staleBookmarks) BookmarkForTime(ctx context.Context, cell string, t time.Time) (durability.Bookmark, error) {
	bm, ok := l.Log.(durability.Bookmarks)
	if !ok {
		return durability.Bookmark{}, &durability.NoBookmarksError{Cell: cell}
	}
	return bm.BookmarkForTime(ctx, cell, t)
}

func (l staleBookmarks) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.Log.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return staleCellLog{cl}, nil
}

type staleCellLog struct{ durability.CellLog }

func (c staleCellLog) DurableBookmark() (durability.Bookmark, bool) {
	db, ok := c.CellLog.(durability.DurableBookmarker)
	if !ok {
		return durability.Bookmark{}, false
	}
	b, ok := db.DurableBookmark()
	if ok && b.TXID > 1 {
		b.TXID--
	}
	return b, ok
}
