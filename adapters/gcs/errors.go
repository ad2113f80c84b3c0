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

// Hints for the bucket's definite refusals, naming what the user sets.
const (
	accessHint = "check GOOGLE_APPLICATION_CREDENTIALS (or gcloud auth application-default login) and that the account may use the bucket"
	bucketHint = "check the bucket's name in the URL, and STORAGE_EMULATOR_HOST for an emulator"
)

// refusal reports a definite refusal: credentials refused (401, 403) or a
// missing bucket (the client's ErrBucketNotExist; a 404 to a write or a
// listing, which only a missing bucket answers). Nothing was applied,
// whatever the request's condition.
func refusal(op string, err error) *store.RefusedError {
	st := status(err)
	switch {
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return &store.RefusedError{Kind: store.ErrAccessDenied, Status: st, Hint: accessHint, Err: err}
	case errors.Is(err, storage.ErrBucketNotExist),
		st == http.StatusNotFound && (op == "put" || op == "list"):
		return &store.RefusedError{Kind: store.ErrBucketNotFound, Status: st, Hint: bucketHint, Err: err}
	}
	return nil
}

// writeError maps a failed Put. A conditional write is precondition failed
// only on a 412 and ambiguous on anything else; an unconditional one is a
// plain failure on a 4xx answer and ambiguous otherwise.
func writeError(key string, cond store.Condition, err error) error {
	if r := refusal("put", err); r != nil {
		return &store.OpError{Op: "put", Key: key, Err: r}
	}
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
	if r := refusal(op, err); r != nil {
		return &store.OpError{Op: op, Key: key, Err: r}
	}
	if op == "get" && isMissingObject(err) {
		return &store.OpError{Op: op, Key: key, Err: store.ErrNotFound}
	}
	return &store.OpError{Op: op, Key: key, Err: err}
}
