package s3

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cellb/cellb/core/store"
)

// Hints for the bucket's definite refusals, naming what the user sets.
const (
	accessHint = "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and that the bucket's policy allows the operation"
	bucketHint = "check the bucket's name in the URL, AWS_REGION, and AWS_ENDPOINT_URL_S3 for an S3-compatible service"
)

// Classify is the one place S3's statuses and codes are read:
//   - 401, 403: the credentials were refused;
//   - 404 NoSuchBucket: the bucket is missing (never a missing key);
//     404 NoSuchUpload: a multipart upload is gone, a plain refusal;
//     any other 404: the key is missing (the Bucket turns that into a
//     precondition failure for If-Match);
//   - 412, and a 409 ConditionalRequestConflict (another conditional write
//     to the key was in flight) or an "already exists" code some
//     S3-compatible services use for If-None-Match: the condition was
//     cleanly refused;
//   - 409 ObjectParentIsFile or ExistingObjectIsDirectory: a
//     file-system-backed server (versitygw's posix backend) cannot hold a
//     key that needs a file and a directory of the same name ("x/y" while
//     "x" exists, or the other way round);
//   - 416: the range starts past the end;
//   - 429 and 5xx, or no response at all (the SDK having used its own
//     retries): worth one more try for a read, ambiguous for a write;
//   - any other 4xx: a definite refusal of the request.
func (d *driver) Classify(err error) store.ErrorClass {
	st, c := status(err), code(err)
	kind := store.KindUnknown
	switch {
	case errors.Is(err, errSourceChanged):
		kind = store.KindNotFound
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return store.ErrorClass{Kind: store.KindAccessDenied, Status: st, Code: c, Hint: accessHint}
	case st == http.StatusNotFound && c == "NoSuchBucket":
		return store.ErrorClass{Kind: store.KindBucketNotFound, Status: st, Code: c, Hint: bucketHint}
	case st == http.StatusNotFound && c == "NoSuchUpload":
		kind = store.KindRejected
	case st == http.StatusNotFound:
		kind = store.KindNotFound
	case st == http.StatusPreconditionFailed:
		kind = store.KindPreconditionFailed
	case st == http.StatusConflict:
		switch c {
		case "ConditionalRequestConflict", "AlreadyExists", "ObjectAlreadyExists", "KeyAlreadyExists":
			kind = store.KindPreconditionFailed
		case "ObjectParentIsFile", "ExistingObjectIsDirectory":
			kind = store.KindInvalidKey
		default:
			kind = store.KindRejected
		}
	case st == http.StatusRequestedRangeNotSatisfiable:
		kind = store.KindInvalidRange
	case st == http.StatusTooManyRequests || st >= 500:
		kind = store.KindTransient
	case st >= 400:
		kind = store.KindRejected
	case st == 0 && noResponse(err):
		kind = store.KindTransient
	}
	return store.ErrorClass{Kind: kind, Status: st, Code: c}
}

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

// noResponse reports an SDK call that got no answer (a connection refused
// or reset, a timeout of the transport), as opposed to a context that
// ended, which another try cannot help.
func noResponse(err error) bool {
	var oe *smithy.OperationError
	return errors.As(err, &oe) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
