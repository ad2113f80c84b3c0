package r2

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/store"
)

// The error kinds, for errors.Is. Each is carried by a typed error below.
var (
	// ErrNotFound: the key names no object (*NotFoundError). It also
	// matches store.ErrNotFound.
	ErrNotFound = errors.New("the specified key does not exist")
	// ErrPreconditionFailed: an onlyIf condition did not hold
	// (*PreconditionFailedError). It also matches
	// store.ErrPreconditionFailed.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrChecksumMismatch: a Put's body does not have the checksum the
	// caller gave (*ChecksumError). Nothing was written.
	ErrChecksumMismatch = errors.New("the checksum you specified did not match what we received")
	// ErrInvalidKey: the key is not a valid object name (*KeyError).
	ErrInvalidKey = errors.New("the specified object name is not valid")
	// ErrInvalidMetadata: the record does not fit the store's metadata, or
	// an argument is malformed (*MetadataError).
	ErrInvalidMetadata = errors.New("invalid object metadata")
	// ErrInvalidBucket: a bucket name the binding cannot use.
	ErrInvalidBucket = errors.New("invalid bucket name")
)

// NotFoundError: no object under Key.
type NotFoundError struct {
	Bucket, Key string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("r2 %s/%s: %v", e.Bucket, e.Key, ErrNotFound)
}

// Is matches ErrNotFound and store.ErrNotFound.
func (e *NotFoundError) Is(target error) bool {
	return target == ErrNotFound || target == store.ErrNotFound
}

// PreconditionFailedError: an onlyIf condition did not hold. Object is the
// object the condition was checked against (nil when there was none).
type PreconditionFailedError struct {
	Bucket, Key string
	Object      *Object
	// Reason names the condition that failed ("etagMatches", …).
	Reason string
}

func (e *PreconditionFailedError) Error() string {
	return fmt.Sprintf("r2 %s/%s: %v: %s", e.Bucket, e.Key, ErrPreconditionFailed, e.Reason)
}

// Is matches ErrPreconditionFailed and store.ErrPreconditionFailed.
func (e *PreconditionFailedError) Is(target error) bool {
	return target == ErrPreconditionFailed || target == store.ErrPreconditionFailed
}

// ChecksumError: the body's Algorithm checksum is Got, the caller said Want
// (both hex).
type ChecksumError struct {
	Bucket, Key string
	Algorithm   string
	Want, Got   string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("r2 %s/%s: %v: %s %s, the body has %s", e.Bucket, e.Key, ErrChecksumMismatch, e.Algorithm, e.Want, e.Got)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksumMismatch }

// KeyError: Key is not a valid object name, for Reason.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	k := e.Key
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	return fmt.Sprintf("r2 key %q: %v: %s", k, ErrInvalidKey, e.Reason)
}

func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// MetadataError: the object's record cannot be stored or read, for Reason.
type MetadataError struct {
	Bucket, Key string
	Reason      string
}

func (e *MetadataError) Error() string {
	return fmt.Sprintf("r2 %s/%s: %v: %s", e.Bucket, e.Key, ErrInvalidMetadata, e.Reason)
}

func (e *MetadataError) Unwrap() error { return ErrInvalidMetadata }
