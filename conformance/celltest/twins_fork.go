package celltest

import (
	"context"
	"time"

	"github.com/cellb/cellb/core/durability"
)

// ForkIgnoresBookmark is a log whose Fork copies the source's newest state
// whatever bookmark it is asked for (a fork that lists the newest chain
// and never plans to the bookmark's TXID).
func ForkIgnoresBookmark(l durability.Log) durability.Log { return forkNewest{l} }

type forkNewest struct{ durability.Log }

func (l forkNewest) Fork(ctx context.Context, req durability.ForkRequest) (durability.ForkResult, error) {
	f, ok := l.Log.(durability.Forker)
	if !ok {
		return durability.ForkResult{}, &durability.NoForkError{Cell: req.Source, Reason: "the wrapped log cannot fork"}
	}
	at := req.At
	req.At = durability.Bookmark{}
	res, err := f.Fork(ctx, req)
	if err == nil && !at.IsZero() {
		res.At = at // and says it did as asked
	}
	return res, err
}

func (l forkNewest) NewestBookmark(ctx context.Context, cell string) (durability.Bookmark, error) {
	bm, ok := l.Log.(durability.Bookmarks)
	if !ok {
		return durability.Bookmark{}, &durability.NoBookmarksError{Cell: cell}
	}
	return bm.NewestBookmark(ctx, cell)
}

func (l forkNewest) BookmarkForTime(ctx context.Context, cell string, t time.Time) (durability.Bookmark, error) {
	bm, ok := l.Log.(durability.Bookmarks)
	if !ok {
		return durability.Bookmark{}, &durability.NoBookmarksError{Cell: cell}
	}
	return bm.BookmarkForTime(ctx, cell, t)
}

func (l forkNewest) Holds(ctx context.Context, cell string) (bool, error) {
	p, ok := l.Log.(durability.Prober)
	if !ok {
		return true, nil
	}
	return p.Holds(ctx, cell)
}
