package store

import "errors"

// NotAppliedError marks a write's failure that a driver knows changed
// nothing in the bucket, whatever the condition and however much of the
// body had left: a multipart upload or staged blocks that were never
// committed, a temporary file that was never renamed. The Bucket then
// reports the failure as definite, with the portable kind Classify gives
// the cause (a refusal keeps its hint), instead of ambiguous.
type NotAppliedError struct {
	// Step names what failed ("uploading parts"); it may be empty.
	Step string
	Err  error
}

// NotApplied marks err as the failure of step, before anything could be
// applied (see NotAppliedError). A nil err stays nil.
func NotApplied(step string, err error) error {
	if err == nil {
		return nil
	}
	return &NotAppliedError{Step: step, Err: err}
}

func (e *NotAppliedError) Error() string {
	if e.Step == "" {
		return e.Err.Error()
	}
	return e.Step + ": " + e.Err.Error()
}

func (e *NotAppliedError) Unwrap() error { return e.Err }

// notApplied reports whether err carries a NotAppliedError.
func notApplied(err error) bool {
	var na *NotAppliedError
	return errors.As(err, &na)
}
