package azure

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/cellb/cellb/core/store"
)

// Hints for the bucket's definite refusals, naming what the user sets.
const (
	accessHint = "check AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_CONNECTION_STRING, and the account's access rules"
	bucketHint = "check the container's name in the URL and the account (AZURE_STORAGE_ACCOUNT, or CELLB_AZURE_ENDPOINT for an emulator)"
)

// Classify maps Azure's answers to the portable kinds:
//   - 401 and 403 (AuthenticationFailed, AuthorizationFailure, …): the
//     credentials were refused;
//   - ContainerNotFound: the container is missing, never taken for a
//     missing key (a misnamed container must not look empty);
//   - any other 404 (BlobNotFound; CannotVerifyCopySource for a copy's
//     missing source; a HEAD's answer without a code): the blob is missing;
//   - 412 ConditionNotMet (If-Match with another ETag) and 409
//     BlobAlreadyExists (Azure's answer to If-None-Match: * on an existing
//     blob): the condition was cleanly refused. Any other 409 (a lease, a
//     pending copy) is only a refusal, so a conditional write that meets
//     one stays ambiguous;
//   - 416: a range past the end;
//   - 408, 429, 5xx and a connection that failed: transient;
//   - any other 4xx: a definite refusal of the request.
func (d *driver) Classify(err error) store.ErrorClass {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		if transient(err) {
			return store.ErrorClass{Kind: store.KindTransient}
		}
		return store.ErrorClass{}
	}
	c := store.ErrorClass{Status: re.StatusCode, Code: re.ErrorCode}
	switch st := re.StatusCode; {
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		c.Kind, c.Hint = store.KindAccessDenied, accessHint
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		c.Kind, c.Hint = store.KindBucketNotFound, bucketHint
	case st == http.StatusNotFound:
		c.Kind = store.KindNotFound
	case st == http.StatusPreconditionFailed,
		st == http.StatusConflict && bloberror.HasCode(err, bloberror.BlobAlreadyExists):
		c.Kind = store.KindPreconditionFailed
	case st == http.StatusRequestedRangeNotSatisfiable:
		c.Kind = store.KindInvalidRange
	case st == http.StatusRequestTimeout || st == http.StatusTooManyRequests || st >= 500:
		c.Kind = store.KindTransient
	case st >= 400:
		c.Kind = store.KindRejected
	}
	return c
}

// transient reports a request that got no answer because the connection
// failed; an ended context is not one (trying again cannot help).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
