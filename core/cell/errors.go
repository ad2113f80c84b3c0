package cell

import (
	"errors"
	"fmt"
	"time"

	"github.com/cellb/cellb/core/cellerr"
)

// BrokenObjectError is what every caller of a broken object instance gets:
// the instance was reset (a commit failed to become durable, a
// BlockConcurrencyWhile callback failed, a handler panicked, or the cell's
// lease was lost). An alias: the type lives in the leaf core/cellerr so
// that core/httperr can answer it without importing this package.
type BrokenObjectError = cellerr.BrokenObjectError

// BlockConcurrencyTimeoutError is the cause (BrokenObjectError.Err) of a
// reset by a BlockConcurrencyWhile callback that ran past
// Options.BlockConcurrencyTimeout.
type BlockConcurrencyTimeoutError struct {
	Limit time.Duration
}

func (e *BlockConcurrencyTimeoutError) Error() string {
	return fmt.Sprintf("cell: blockConcurrencyWhile() did not finish within %v", e.Limit)
}

// NoAlarmHandlerError is returned by State.SetAlarm on an object whose
// class has no Alarm method (does not implement Alarmer): the alarm could
// never run.
type NoAlarmHandlerError struct {
	Class string
}

func (e *NoAlarmHandlerError) Error() string {
	return fmt.Sprintf("cell: SetAlarm refused: class %s has no Alarm method (implement cell.Alarmer), so the alarm could never run", e.Class)
}

// InvalidIDError is returned by IDFromString for a malformed or foreign id.
type InvalidIDError struct {
	ID     string
	Reason string
}

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("cell: invalid id %q: %s", e.ID, e.Reason)
}

// InvalidCellKeyError is returned for a cell key or class name outside
// celld's fence.
type InvalidCellKeyError struct {
	Key    string
	Reason string
}

func (e *InvalidCellKeyError) Error() string {
	return fmt.Sprintf("cell: invalid cell key or class name %q: %s", e.Key, e.Reason)
}

// DeniedError is returned when the cell's SQLite authorizer refuses a user
// statement. Action and Detail name what was refused (e.g. "PRAGMA" and
// "journal_mode", or "READ" and "_cf_KV").
type DeniedError struct {
	Action string
	Detail string
	Why    string
	// Err is the driver's error for the failed statement.
	Err error
}

func (e *DeniedError) Error() string {
	s := "cell: SQL denied: " + e.Action
	if e.Detail != "" {
		s += " " + e.Detail
	}
	return s + " (" + e.Why + ")"
}

func (e *DeniedError) Unwrap() error { return e.Err }

// PanicError carries a panic recovered from user code.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ActivationError is returned when an object cannot be started: its lease,
// database, log or constructor failed. The next call tries again. An
// alias of core/cellerr's, as BrokenObjectError is.
type ActivationError = cellerr.ActivationError

var (
	// ErrClosed is returned for calls made after Runtime.Close started
	// (core/cellerr's, as BrokenObjectError is).
	ErrClosed = cellerr.ErrClosed
	// ErrForking is returned for calls to a cell while Runtime.Fork of this
	// runtime writes it; call again once the fork has returned.
	ErrForking = errors.New("cell: a fork is writing this cell; call it again when the fork has returned")
	// ErrNotInTurn is returned by storage calls whose context does not
	// belong to the turn currently holding the object's input gate: a
	// context from outside the handler, from a goroutine the handler
	// started, or used while the handler is yielded in Await.
	ErrNotInTurn = errors.New("cell: storage used outside the object's turn (pass the context the handler received)")
	// ErrYieldInTransaction was returned by Await and stub calls made
	// inside SQL.Transaction.
	//
	// Deprecated: since issue 23 a yield inside SQL.Transaction keeps the
	// gate and the open transaction (a critical section), so nothing
	// returns it.
	ErrYieldInTransaction = errors.New("cell: cannot yield inside SQL.Transaction")
	// ErrNotHTTPHandler is returned by Stub.Fetch when the object does not
	// implement http.Handler.
	ErrNotHTTPHandler = errors.New("cell: object does not implement http.Handler")
	// ErrNoRows is returned by Row.Scan when the query returned no row.
	ErrNoRows = errors.New("cell: no rows in result set")
	// ErrRowsClosed is reported by Rows used after Close or after the turn
	// that opened them ended.
	ErrRowsClosed = errors.New("cell: rows closed (rows do not outlive the turn that opened them)")
	// ErrDuplicateClass is returned by Register for a class name already
	// registered.
	ErrDuplicateClass = errors.New("cell: class already registered")
	// ErrUnknownClass is returned by Runtime.Namespace for a class that was
	// not registered.
	ErrUnknownClass = errors.New("cell: unknown class")
)
