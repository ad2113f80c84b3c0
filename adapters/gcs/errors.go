package gcs

import (
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/cellb/cellb/core/store"
)

// ErrNoVersion reports a successful write whose response carried no
// generation. The write was applied but its version is unknown, so Put
// returns it as an ambiguous outcome (the caller re-reads), never as an
// empty version.
var ErrNoVersion = errors.New("gcs: the response carried no object generation")

// status returns the HTTP status behind err, or 0 when no answer came back.
func status(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// isMissingObject reports a missing object, never a missing bucket: a
// misnamed bucket must not look like an empty key.
func isMissingObject(err error) bool {
	if errors.Is(err, storage.ErrBucketNotExist) {
		return false
	}
	return errors.Is(err, storage.ErrObjectNotExist)
}

// isCleanRejection reports an answer that says a conditional write was not
// applied: 412 (the generation precondition did not hold). GCS answers a
// generation match on a missing object with 412 as well.
func isCleanRejection(err error) bool {
	return status(err) == http.StatusPreconditionFailed
}

// writeError maps a failed Put. A conditional write is precondition failed
// only on a 412 and ambiguous on anything else; an unconditional one is a
// plain failure on a 4xx answer and ambiguous otherwise.
func writeError(key string, cond store.Condition, err error) error {
	if cond.IsConditional() {
		if isCleanRejection(err) {
			return &store.OpError{Op: "put", Key: key, Err: fmt.Errorf("%w: %w", store.ErrPreconditionFailed, err)}
		}
		return store.Ambiguous("put", key, err)
	}
	if s := status(err); s >= 400 && s < 500 {
		return &store.OpError{Op: "put", Key: key, Err: err}
	}
	return store.Ambiguous("put", key, err)
}

// readError maps a failed Get, Delete or List.
func readError(op, key string, err error) error {
	if op == "get" && isMissingObject(err) {
		return &store.OpError{Op: op, Key: key, Err: store.ErrNotFound}
	}
	return &store.OpError{Op: op, Key: key, Err: err}
}
