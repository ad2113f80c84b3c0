package celltest

import (
	"context"
	"errors"
	"time"

	"github.com/cellb/cellb/core/durability"
)

// IgnoreRestoreRequest is a log that answers a restore on the next
// session with the current state's bookmark and records nothing: the next
// session serves the newest state.
func IgnoreRestoreRequest(l durability.Log) durability.Log {
	bm, ok := l.(durability.Bookmarks)
	if !ok {
		return l
	}
	return ignoreRestoreLog{Log: l, bm: bm}
}

type ignoreRestoreLog struct {
	durability.Log
	bm durability.Bookmarks
}

func (l ignoreRestoreLog) NewestBookmark(ctx context.Context, cell string) (durability.Bookmark, error) {
	return l.bm.NewestBookmark(ctx, cell)
}

func (l ignoreRestoreLog) BookmarkForTime(ctx context.Context, cell string, t time.Time) (durability.Bookmark, error) {
	return l.bm.BookmarkForTime(ctx, cell, t)
}

func (l ignoreRestoreLog) Holds(ctx context.Context, cell string) (bool, error) {
	if p, ok := l.Log.(durability.Prober); ok {
		return p.Holds(ctx, cell)
	}
	return true, nil
}

func (l ignoreRestoreLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.Log.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return ignoreRestoreCellLog{CellLog: cl, cell: req.Cell, bm: l.bm}, nil
}

type ignoreRestoreCellLog struct {
	durability.CellLog
	cell string
	bm   durability.Bookmarks
}

func (c ignoreRestoreCellLog) DurableBookmark() (durability.Bookmark, bool) {
	if db, ok := c.CellLog.(durability.DurableBookmarker); ok {
		return db.DurableBookmark()
	}
	return durability.Bookmark{}, false
}

func (c ignoreRestoreCellLog) RequestRestore(ctx context.Context, b durability.Bookmark, before func() error) (durability.Bookmark, error) {
	if u, ok := c.DurableBookmark(); ok {
		return u, nil
	}
	return c.bm.NewestBookmark(ctx, c.cell)
}

// DropRestoreRequestAtOpen is a log that drops a restore request as soon
// as the session it restores opens, before that session's snapshot of
// the restored state is stored: a crash in between serves the state from
// before the request.
func DropRestoreRequestAtOpen(l durability.Log) durability.Log {
	rc, ok := l.(restoreCanceller)
	if !ok {
		return l
	}
	return dropAtOpenLog{rc}
}

type restoreCanceller interface {
	durability.Log
	durability.Bookmarks
	durability.Prober
	CancelRestore(ctx context.Context, cell string) error
}

type dropAtOpenLog struct{ restoreCanceller }

func (l dropAtOpenLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.restoreCanceller.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	if rr, ok := cl.(durability.RestoreRequestedOpen); ok {
		if _, from := rr.RestoredFromRequest(); from {
			if err := l.CancelRestore(ctx, req.Cell); err != nil {
				cl.Close(ctx, false)
				return nil, err
			}
		}
	}
	return cl, nil
}

// EpochBlindRestore is a log that, refused a grant whose epoch is not
// above the bucket's newest, opens under an epoch of its own choosing
// instead (the newest plus one): a session the lease never granted writes
// into the cell, and a restore request runs under it.
func EpochBlindRestore(l durability.Log) durability.Log {
	rc, ok := l.(restoreCanceller)
	if !ok {
		return l
	}
	return epochBlindLog{rc}
}

type epochBlindLog struct{ restoreCanceller }

func (l epochBlindLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cl, err := l.restoreCanceller.Open(ctx, req)
	var inUse *durability.EpochInUseError
	if errors.As(err, &inUse) {
		req.Epoch = inUse.Newest + 1
		return l.restoreCanceller.Open(ctx, req)
	}
	return cl, err
}
