package s3

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cellb/cellb/core/store"
)

// ErrNoVersion reports a successful write whose response carried no ETag.
// The write was applied but its version is unknown, so Put returns it as
// an ambiguous outcome: the caller re-reads to learn the version, exactly
// as after a lost response. An empty version is never returned instead.
var ErrNoVersion = errors.New("s3: the response carried no ETag")

// status returns the HTTP status of the response behind err, or 0 when no
// response was received (a network error, a timeout, a cancelled context).
func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.HTTPStatusCode()
	}
	return 0
}

// code returns the S3 error code ("NoSuchKey", "PreconditionFailed", ...).
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isMissingObject tells a missing key apart from a missing bucket, which
// also answers 404 but must never look like an empty key.
func isMissingObject(err error) bool {
	if status(err) != http.StatusNotFound {
		return false
	}
	switch code(err) {
	case "NoSuchBucket", "NoSuchUpload":
		return false
	}
	return true
}

// isCleanRejection reports an answer that says a conditional write was not
// applied: 412 PreconditionFailed; 409 ConditionalRequestConflict (another
// conditional write to the key was in flight) or an "already exists" code
// some S3-compatible services use for If-None-Match; and, for If-Match, a
// 404 for the key (the version cannot match a missing object).
func isCleanRejection(err error, cond store.Condition) bool {
	switch status(err) {
	case http.StatusPreconditionFailed:
		return true
	case http.StatusConflict:
		switch code(err) {
		case "ConditionalRequestConflict", "AlreadyExists", "ObjectAlreadyExists", "KeyAlreadyExists":
			return true
		}
	case http.StatusNotFound:
		return cond.Kind == store.MatchVersion && isMissingObject(err)
	}
	return false
}

// isNestingRefusal reports the answer of a file-system-backed server
// (versitygw's posix backend) to a key that would need a file and a
// directory of the same name, such as "x/y" while "x" exists or the other
// way round. Nothing was written; the key cannot exist on that server.
func isNestingRefusal(err error) bool {
	if status(err) != http.StatusConflict {
		return false
	}
	switch code(err) {
	case "ObjectParentIsFile", "ExistingObjectIsDirectory":
		return true
	}
	return false
}

// Hints for the bucket's definite refusals, naming what the user sets.
const (
	accessHint = "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and that the bucket's policy allows the operation"
	bucketHint = "check the bucket's name in the URL, AWS_REGION, and AWS_ENDPOINT_URL_S3 for an S3-compatible service"
)

// refusal reports a definite refusal: credentials refused (401, 403) or
// a missing bucket (404 NoSuchBucket). Nothing was applied, whatever the
// request's condition, so a write refused this way is not ambiguous.
func refusal(err error) *store.RefusedError {
	st, c := status(err), code(err)
	switch {
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return &store.RefusedError{Kind: store.ErrAccessDenied, Status: st, Code: c, Hint: accessHint, Err: err}
	case st == http.StatusNotFound && c == "NoSuchBucket":
		return &store.RefusedError{Kind: store.ErrBucketNotFound, Status: st, Code: c, Hint: bucketHint, Err: err}
	}
	return nil
}

// writeError maps the failure of a Put (or of a multipart step that
// decides it) to the portable kinds. A conditional write is precondition
// failed only on a clean rejection and ambiguous on anything else; an
// unconditional one is ambiguous unless S3 answered with a 4xx. A key the
// server cannot hold is ErrInvalidKey either way.
func writeError(key string, cond store.Condition, err error) error {
	if r := refusal(err); r != nil {
		return &store.OpError{Op: "put", Key: key, Err: r}
	}
	if isNestingRefusal(err) {
		return &store.OpError{Op: "put", Key: key, Err: fmt.Errorf("%w: the server cannot hold an object and a prefix of the same name: %w", store.ErrInvalidKey, err)}
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

// readError maps the failure of Get, Delete or List.
func readError(op, key string, err error) error {
	if r := refusal(err); r != nil {
		return &store.OpError{Op: op, Key: key, Err: r}
	}
	if op == "get" && isMissingObject(err) {
		return &store.OpError{Op: op, Key: key, Err: store.ErrNotFound}
	}
	return &store.OpError{Op: op, Key: key, Err: err}
}
