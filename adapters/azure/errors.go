package azure

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/cellb/cellb/core/store"
)

// ErrNoVersion reports a successful write whose response carried no ETag.
// The write was applied but its version is unknown, so Put returns it as
// an ambiguous outcome (the caller re-reads), never as an empty version.
var ErrNoVersion = errors.New("azure: the response carried no ETag")

// status returns the HTTP status behind err, or 0 when no answer came back.
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// isMissingBlob reports a missing blob, never a missing container: a
// misnamed container must not look like an empty key.
func isMissingBlob(err error) bool {
	return status(err) == http.StatusNotFound && !bloberror.HasCode(err, bloberror.ContainerNotFound)
}

// isCleanRejection reports an answer that says a conditional write was not
// applied: 412 ConditionNotMet (If-Match with another ETag), 409
// BlobAlreadyExists (Azure's documented answer to If-None-Match: * on an
// existing blob), and for If-Match a 404 for the blob itself.
func isCleanRejection(err error, cond store.Condition) bool {
	switch status(err) {
	case http.StatusPreconditionFailed:
		return true
	case http.StatusConflict:
		return bloberror.HasCode(err, bloberror.BlobAlreadyExists)
	case http.StatusNotFound:
		return cond.Kind == store.MatchVersion && bloberror.HasCode(err, bloberror.BlobNotFound)
	}
	return false
}

// Hints for the bucket's definite refusals, naming what the user sets.
const (
	accessHint = "check AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_CONNECTION_STRING, and the account's access rules"
	bucketHint = "check the container's name in the URL and the account (AZURE_STORAGE_ACCOUNT, or CELLB_AZURE_ENDPOINT for an emulator)"
)

// refusal reports a definite refusal: credentials refused (401, 403:
// AuthenticationFailed, AuthorizationFailure, …) or a missing container
// (ContainerNotFound). Nothing was applied, whatever the request's
// condition.
func refusal(op string, err error) *store.RefusedError {
	var code string
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		code = re.ErrorCode
	}
	st := status(err)
	switch {
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return &store.RefusedError{Kind: store.ErrAccessDenied, Status: st, Code: code, Hint: accessHint, Err: err}
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return &store.RefusedError{Kind: store.ErrBucketNotFound, Status: st, Code: code, Hint: bucketHint, Err: err}
	}
	return nil
}

// writeError maps the failure of Put Blob or Put Block List. A conditional
// write is precondition failed only on a clean rejection and ambiguous on
// anything else; an unconditional one is a plain failure on a 4xx answer
// and ambiguous otherwise.
func writeError(key string, cond store.Condition, err error) error {
	if r := refusal("put", err); r != nil {
		return &store.OpError{Op: "put", Key: key, Err: r}
	}
	if cond.IsConditional() {
		if isCleanRejection(err, cond) {
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
	if op == "get" && isMissingBlob(err) {
		return &store.OpError{Op: op, Key: key, Err: store.ErrNotFound}
	}
	return &store.OpError{Op: op, Key: key, Err: err}
}
