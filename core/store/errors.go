package store

import (
	"errors"
	"fmt"
)

// The portable error kinds. Adapters wrap them (usually with *OpError), and
// callers test with errors.Is.
var (
	// ErrNotFound: the key names no object.
	ErrNotFound = errors.New("object not found")
	// ErrPreconditionFailed: the condition of a Put did not hold, and the
	// store changed nothing (HTTP 412, or 409 for an existing object).
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrAmbiguous: the outcome of a write is unknown — it may have been
	// applied (a timeout after the request was sent, a 5xx, a lost
	// response). The caller must re-read to learn what happened.
	ErrAmbiguous = errors.New("outcome unknown: the write may have been applied")
	// ErrInvalidKey: the key is not acceptable (see ValidateKey).
	ErrInvalidKey = errors.New("invalid key")
	// ErrInvalidMetadata: a metadata name or value is not acceptable.
	ErrInvalidMetadata = errors.New("invalid metadata")
)

// OpError records the operation and key that failed. Err holds one of the
// portable kinds above (possibly joined with the adapter's own cause).
type OpError struct {
	Op  string // "get", "put", "delete", "list"
	Key string // the key, or the prefix for list
	Err error
}

func (e *OpError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("store %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("store %s %s: %v", e.Op, e.Key, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// NotFound returns an ErrNotFound for op on key.
func NotFound(op, key string) error {
	return &OpError{Op: op, Key: key, Err: ErrNotFound}
}

// PreconditionFailed returns an ErrPreconditionFailed for op on key.
func PreconditionFailed(op, key string) error {
	return &OpError{Op: op, Key: key, Err: ErrPreconditionFailed}
}

// Ambiguous marks cause as an ambiguous outcome of op on key. The result
// matches both ErrAmbiguous and cause with errors.Is.
func Ambiguous(op, key string, cause error) error {
	if cause == nil {
		return &OpError{Op: op, Key: key, Err: ErrAmbiguous}
	}
	return &OpError{Op: op, Key: key, Err: fmt.Errorf("%w: %w", ErrAmbiguous, cause)}
}

// IsNotFound reports whether err is (or wraps) ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPreconditionFailed reports whether err is (or wraps) ErrPreconditionFailed.
func IsPreconditionFailed(err error) bool { return errors.Is(err, ErrPreconditionFailed) }

// IsAmbiguous reports whether err is (or wraps) ErrAmbiguous.
func IsAmbiguous(err error) bool { return errors.Is(err, ErrAmbiguous) }
