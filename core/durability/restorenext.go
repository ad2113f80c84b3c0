package durability

import (
	"context"
	"errors"
	"fmt"
)

// NextSessionRestorer is implemented by a CellLog that can restore its
// cell to a bookmark the next time the cell is opened (Durable Objects'
// onNextSessionRestoreBookmark): the LTX log. RequestRestore checks that
// b names a state the bucket still holds and is not after the cell's
// current one, and records the request in the bucket, durably, before it
// returns undo, the bookmark of the current state (every commit the
// caller made durable first, with State.Sync), itself kept restorable;
// the next Open under a newer epoch restores b instead of the newest
// state, and the request is dropped only once that epoch's snapshot of
// the restored state is durable. before, if set, runs once every check has
// passed and right before the request is recorded (the runtime marks a
// local-primary database there); its error stops the request.
type NextSessionRestorer interface {
	RequestRestore(ctx context.Context, b Bookmark, before func() error) (undo Bookmark, err error)
}

// Before reports whether a names a state committed before b's (the
// bookmarks' string order).
func (a Bookmark) Before(b Bookmark) bool {
	return a.Epoch < b.Epoch || a.Epoch == b.Epoch && a.TXID < b.TXID
}

// RestoreRequestedOpen is implemented by a CellLog whose Open restored a
// recorded request (NextSessionRestorer). The runtime then writes the
// epoch's bookkeeping at once, so the epoch's snapshot of the restored
// state goes up (and the request is dropped) without waiting for the
// object's first write, and clears the restored alarm.
//
// RestoreSettled returns nil once the request is dropped; an error when
// it will not be by this log (it closed first, or a newer request
// replaced it).
type RestoreRequestedOpen interface {
	RestoredFromRequest() (Bookmark, bool)
	RestoreSettled(ctx context.Context) error
}

// ErrRestoreSuperseded: a restore request recorded in the session that
// restored an earlier one replaced it, so the earlier one's record is not
// dropped (RestoreRequestedOpen.RestoreSettled).
var ErrRestoreSuperseded = errors.New("a newer restore request replaced the one this session restored")

// RestoreNeedsEpochError: a restore on the next session was asked of a
// cell held without ownership epochs (lease.None): every activation
// writes epoch 0 and restarts at TXID 1, so a restored state could not be
// told from the one it replaces and a bookmark would not outlive it.
type RestoreNeedsEpochError struct {
	Cell string
}

func (e *RestoreNeedsEpochError) Error() string {
	return fmt.Sprintf("%s: a restore on the next session needs a lease with epochs (shard locks or fleet ownership); lease.None writes every session as epoch 0", e.Cell)
}

// RestoreUnsupportedError: the cell's log keeps bookmarks but records no
// restore requests (it does not implement NextSessionRestorer).
type RestoreUnsupportedError struct {
	Cell   string
	Reason string
}

func (e *RestoreUnsupportedError) Error() string {
	return fmt.Sprintf("%s: cannot restore a bookmark on the next session: %s", e.Cell, e.Reason)
}

// BookmarkInFutureError: a bookmark names a state after the cell's
// current one.
type BookmarkInFutureError struct {
	Cell     string
	Bookmark string
	Current  string
}

func (e *BookmarkInFutureError) Error() string {
	return fmt.Sprintf("%s: bookmark %s is after the cell's current state %s", e.Cell, e.Bookmark, e.Current)
}

// BookmarkNotRestorableError: a bookmark names no state the bucket can
// restore: the zero bookmark (the empty database before the first
// commit), an epoch the bucket no longer (or never) held, or a TXID that
// is not the end of a file of its epoch (Err says which).
type BookmarkNotRestorableError struct {
	Cell     string
	Bookmark string
	Err      error
}

func (e *BookmarkNotRestorableError) Error() string {
	return fmt.Sprintf("%s: bookmark %s cannot be restored: %v", e.Cell, e.Bookmark, e.Err)
}

func (e *BookmarkNotRestorableError) Unwrap() error { return e.Err }

// ErrEmptyBookmark: the zero bookmark names the database before the
// cell's first commit; there is no file to restore it from (DeleteAll
// empties a cell).
var ErrEmptyBookmark = errors.New("the zero bookmark names the empty database before the first commit")
