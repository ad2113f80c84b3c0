// Package lease defines the Lease port: who may write a cell.
//
// A runtime asks TryAcquire before it activates a cell and holds the Grant
// while the cell lives. Implementations: the fleet bucket (celld's
// ownership protocol), single-host shard locks, and None (one process; the
// local file is the primary copy).
package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/layout"
)

// Lease hands out per-cell write grants.
type Lease interface {
	// TryAcquire takes cellKey ("<Class>:<id>") for this process or fails
	// with *CellOwnedElsewhereError (or *RecordLostError, or a store
	// error). It does not wait for a current owner to let go.
	TryAcquire(ctx context.Context, cellKey string) (Grant, error)
}

// Grant is one acquisition of one cell.
type Grant interface {
	// Epoch numbers this acquisition; it grows with every acquisition of
	// the cell, so one epoch has exactly one writer. None returns 0.
	Epoch() uint64
	// BucketWins reports whether the cell's durable copy in the bucket
	// replaces the local database on activation (fleet ownership), as
	// opposed to the local file being the primary copy.
	BucketWins() bool
	// Lost is closed when the grant is lost (lease lapsed, record taken).
	Lost() <-chan struct{}
	// Err says why the grant was lost, or nil while it holds.
	Err() error
	// CheckWrite returns nil while a write may still be acknowledged under
	// this grant, and the self-fencing refusal once it may not.
	CheckWrite() error
	// Release gives the cell up so the next owner takes it at once.
	Release(ctx context.Context) error
}

// EpochRecorder is implemented by grants whose epoch is made durable only
// when the holder first writes under it (the single-host shard lease), so
// an activation that only reads costs no synced write. The runtime calls
// RecordEpoch before its first local commit under the grant and before it
// hands anything to the log; only then may anything be stored under the
// epoch. Calls after the first return nil at once.
type EpochRecorder interface {
	RecordEpoch(ctx context.Context) error
}

// AckChecker is implemented by grants that confirm their ownership in the
// backing store before a write is acknowledged (the fleet grant re-reads
// own.json: celld's acknowledgement rule).
type AckChecker interface {
	// CheckAck returns nil if a write that is already durable may be
	// acknowledged now under this grant.
	CheckAck(ctx context.Context) error
}

// CheckAck is the last check before a durable write is acknowledged:
// g.CheckWrite, then g's CheckAck when it implements AckChecker.
func CheckAck(ctx context.Context, g Grant) error {
	if err := g.CheckWrite(); err != nil {
		return err
	}
	if a, ok := g.(AckChecker); ok {
		return a.CheckAck(ctx)
	}
	return nil
}

// CellOwnedElsewhereError: another node's live ownership record holds the
// cell.
type CellOwnedElsewhereError struct {
	Class, ID string // the cell key split at the first ':'
	Owner     string // the owning node, when known
	Addr      string // the owner's peer address, when known
	// Incarnation is the owner's process generation as its node lease
	// publishes it (ownership_index_generation), when known: a call
	// forwarded to the owner is signed for this incarnation only.
	Incarnation string
}

func (e *CellOwnedElsewhereError) Error() string {
	return fmt.Sprintf("Durable Object %s/%s is owned by another node", e.Class, e.ID)
}

// ShardOwnerLostError: on one host, the call was routed to the process
// holding the cell's shard, and that process went away before it answered.
// The call may or may not have been applied; the router does not retry it.
type ShardOwnerLostError struct {
	Class, ID string // the cell key split at the first ':'
	Owner     string // the holder, as its record named it
	Err       error  // what broke the connection
}

func (e *ShardOwnerLostError) Error() string {
	what := "the cell"
	if e.Class != "" {
		what = "Durable Object " + e.Class + "/" + e.ID
	}
	return fmt.Sprintf("the process holding %s went away during the request (%v): the request may or may not have been applied", what, e.Err)
}

func (e *ShardOwnerLostError) Unwrap() error { return e.Err }

// RecordLostError: cells/<scope>/own.json is missing but the cell's log
// exists (LTX, a changeset log or backups).
type RecordLostError struct {
	Scope      string // the cell key
	Log        string // what holds the cell: "LTX" (also when empty), "a changeset log", "backups"
	Newest     string // a key in the newest epoch found
	Epoch      uint64 // the newest epoch in that log
	RetryAfter int64  // milliseconds the cell stays refused
}

func (e *RecordLostError) Error() string {
	what := e.Log
	if what == "" {
		what = "LTX"
	}
	own := layout.OwnKey(e.Scope)
	return fmt.Sprintf("ownership record lost: %s is missing, but the bucket holds %s (%s); "+
		"repair it with `cellb repair <bucket-url> %s --apply`, which writes the released record "+
		"{\"node\":\"\",\"epoch\":%d} create-only",
		own, what, e.Newest, e.Scope, e.Epoch)
}

// LeaseLapsedError is the self-fencing refusal.
type LeaseLapsedError struct {
	Cell string
}

func (e *LeaseLapsedError) Error() string {
	return fmt.Sprintf("%s: this node's lease has lapsed; the write is refused", e.Cell)
}

// ErrReleased is the Err of a grant after Release.
var ErrReleased = errors.New("lease released")
