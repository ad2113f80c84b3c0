package store

import (
	"context"
	"errors"
	"io"
)

// Driver is the contract a bucket backend implements, in the style of
// gocloud.dev/blob/driver: every method is required, and each does only
// what its SDK call does. The portable rules — key, prefix, metadata and
// header validation, range checks, the limit of a listing page, the
// wrapping of errors into *OpError with the portable kinds, when a write
// is ambiguous, a body that ends early or runs long, one retry of a read
// that failed transiently — are the Bucket's, written once for every
// backend (see NewBucket). Callers never hold a Driver: they hold the
// Bucket (a Store, Streamer, Copier and DataGetter).
//
// A Driver's methods are called only with arguments the Bucket has
// checked: valid keys and prefixes, valid metadata and headers, offset
// >= 0, a listing limit in 1..1000. They return the SDK's errors as they
// are (or wrapped); the Bucket asks Classify what each one means. A
// driver may also return an error that already carries a portable kind
// (ErrNotFound, ErrPreconditionFailed, ErrInvalidRange, ErrInvalidKey, a
// *RefusedError) when it learns the fact without the server, and the
// Bucket keeps it.
type Driver interface {
	// NewRangeReader opens length bytes of key from offset (length < 0:
	// to the end; a length that runs past the end is cut at the end). The
	// Reader's Size is the whole object's, Offset and Length the range it
	// delivers. An offset past the end is ErrInvalidRange (or an error
	// Classify calls KindInvalidRange). With dataOnly the caller needs
	// neither Metadata nor Headers, and a backend that needs a second
	// request for them (GCS) skips it.
	NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*Reader, error)
	// PutFrom writes the object read from r (size bytes, or -1 when
	// unknown) under opts.Condition and returns its new Version, which is
	// never empty. The object must be published only once r has returned
	// io.EOF: an error from r leaves the old object, or none.
	PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns one page (see ListOptions and ListPage).
	List(ctx context.Context, opts ListOptions) (ListPage, error)
	// Copy copies src to dst inside the bucket, create-only on dst (see
	// Copier). A backend that cannot copy without the bytes passing
	// through the caller returns ErrCopyUnsupported, and the Bucket
	// streams the copy instead.
	Copy(ctx context.Context, src, dst string) (Version, error)
	// Classify says what an error returned by this driver means. It is
	// the one place a backend maps its statuses and codes.
	Classify(err error) ErrorClass
	// Close releases the driver's resources.
	Close() error
}

// ErrCopyUnsupported is returned by a Driver's Copy when the backend has
// no copy inside the bucket; the Bucket then copies by streaming.
var ErrCopyUnsupported = errors.New("the store cannot copy inside the bucket")

// ErrorKind is what a driver's error means, portably.
type ErrorKind uint8

const (
	// KindUnknown: nothing is known. A failed read is reported as it is;
	// a failed write's outcome is ambiguous.
	KindUnknown ErrorKind = iota
	// KindNotFound: the key names no object (never a missing bucket).
	KindNotFound
	// KindPreconditionFailed: the server cleanly rejected a write's
	// condition and changed nothing.
	KindPreconditionFailed
	// KindInvalidRange: a ranged read started past the end of the object.
	KindInvalidRange
	// KindInvalidKey: the backend cannot hold this key (a file-system
	// backed server refusing a key that nests under an object, say).
	// Nothing was written.
	KindInvalidKey
	// KindAccessDenied: the credentials were refused (401, 403).
	// Nothing was applied.
	KindAccessDenied
	// KindBucketNotFound: the bucket or container does not exist.
	// Nothing was applied.
	KindBucketNotFound
	// KindRejected: the server answered with a definite refusal of
	// another kind (a 4xx), so an unconditional write was not applied. A
	// conditional write rejected this way stays ambiguous: only
	// KindPreconditionFailed says a condition was cleanly refused.
	KindRejected
	// KindTransient: the request failed in a way worth trying once more
	// (a 5xx, 429, a connection reset). A write failing this way is
	// ambiguous; the Bucket retries only reads.
	KindTransient
)

// ErrorClass is Classify's answer: the kind, and for refusals what the
// user should check.
type ErrorClass struct {
	Kind ErrorKind
	// Status and Code are the backend's HTTP status and error code, when
	// known; they appear in refusals' messages.
	Status int
	Code   string
	// Hint, for KindAccessDenied and KindBucketNotFound, is one line
	// naming the settings to check (the credential variables).
	Hint string
}
