package store

import (
	"errors"
	"fmt"
)

// The bucket's definite refusals: nothing was applied, and trying again
// with the same settings gives the same answer. They are neither
// ErrAmbiguous nor ErrNotFound, whatever the request was.
var (
	// ErrAccessDenied: the bucket refused the credentials (HTTP 401 or
	// 403: a wrong or expired key, a signature that does not match, a
	// policy that does not allow the operation).
	ErrAccessDenied = errors.New("access denied")
	// ErrBucketNotFound: the bucket (GCS bucket, Azure container) does not
	// exist.
	ErrBucketNotFound = errors.New("bucket not found")
)

// RefusedError is a definite refusal by the bucket, with what the user
// should check. Its message is one line: the kind, the backend's code and
// status, and the hint; the SDK's own error stays reachable with
// errors.As.
type RefusedError struct {
	Kind   error  // ErrAccessDenied or ErrBucketNotFound
	Status int    // the HTTP status, 0 when unknown
	Code   string // the backend's error code, e.g. "SignatureDoesNotMatch"
	Hint   string // one line naming the settings to check
	Err    error  // the SDK's error
}

func (e *RefusedError) Error() string {
	s := e.Kind.Error()
	switch {
	case e.Code != "" && e.Status != 0:
		s += fmt.Sprintf(" (%s, HTTP %d)", e.Code, e.Status)
	case e.Status != 0:
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	case e.Code != "":
		s += " (" + e.Code + ")"
	}
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s
}

// Unwrap gives both the kind and the SDK's error to errors.Is and As.
func (e *RefusedError) Unwrap() []error { return []error{e.Kind, e.Err} }

// IsRefused reports a definite refusal (ErrAccessDenied or
// ErrBucketNotFound).
func IsRefused(err error) bool {
	return errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrBucketNotFound)
}
