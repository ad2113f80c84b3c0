// Package cellerr holds the runtime's errors that CellB answers over HTTP
// (a reset object, a failed activation, a closed runtime). core/cell
// names them by alias (cell.BrokenObjectError, cell.ActivationError,
// cell.ErrClosed), which is how callers match them; they live in this leaf
// so that core/httperr can recognise them without importing core/cell,
// which itself answers with core/httperr (cell.Stub's ServeHTTP).
package cellerr

import (
	"errors"
	"fmt"
)

// BrokenObjectError is what every caller of a broken object instance gets:
// the instance was reset because a commit failed to become durable, a
// BlockConcurrencyWhile callback failed, a handler panicked, or the cell's
// lease was lost. The next call builds a fresh instance from durable state;
// nothing that was acknowledged is lost.
type BrokenObjectError struct {
	// Key is the cell key of the object.
	Key string
	// Reason completes the sentence "Durable Object reset because ...".
	Reason string
	// Err is the underlying failure, if there is one.
	Err error
}

func (e *BrokenObjectError) Error() string {
	return "Durable Object reset because " + e.Reason
}

func (e *BrokenObjectError) Unwrap() error { return e.Err }

// ActivationError is returned when an object cannot be started: its lease,
// database, log or constructor failed. The next call tries again.
type ActivationError struct {
	Key string
	Err error
}

func (e *ActivationError) Error() string {
	return fmt.Sprintf("cell %s: activation failed: %v", e.Key, e.Err)
}

func (e *ActivationError) Unwrap() error { return e.Err }

// ErrClosed is returned for calls made after the runtime's Close started.
var ErrClosed = errors.New("cell: runtime is closed")
