package azure

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/cellb/cellb/core/store"
)

var _ store.Copier = (*Store)(nil)

// copyPoll is how often Copy looks at a copy the service runs in the
// background.
const copyPoll = 200 * time.Millisecond

// Copy implements store.Copier with Copy Blob (StartCopyFromURL): the
// service copies the blob, body, metadata and content headers, inside the
// account. The destination carries If-None-Match: *, so an existing blob
// is never replaced (409 BlobAlreadyExists or 412: ErrPreconditionFailed),
// and the request is sent without retries. Copy Blob has no size limit
// (the synchronous Copy Blob From URL stops at 256 MiB); within one
// account it usually completes at once, and otherwise Copy waits for it,
// polling the destination's copy status. A copy that fails, or whose
// context ends while it runs, is aborted and its destination deleted.
func (s *Store) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	const op = "copy"
	if err := store.ValidateKey(src); err != nil {
		return "", err
	}
	if err := store.ValidateKey(dst); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", &store.OpError{Op: op, Key: dst, Err: err}
	}
	to := s.client.NewBlobClient(dst)
	resp, err := to.StartCopyFromURL(noRetries(ctx), s.client.NewBlobClient(src).URL(), &blob.StartCopyFromURLOptions{
		AccessConditions: accessConditions(store.IfAbsent),
	})
	if err != nil {
		if status(err) == http.StatusNotFound && (bloberror.HasCode(err, bloberror.BlobNotFound) || bloberror.HasCode(err, bloberror.CannotVerifyCopySource)) {
			return "", &store.OpError{Op: op, Key: src, Err: fmt.Errorf("%w: %w", store.ErrNotFound, err)}
		}
		werr := writeError(dst, store.IfAbsent, err)
		if oe, ok := werr.(*store.OpError); ok {
			oe.Op = op
		}
		return "", werr
	}
	if resp.CopyStatus != nil && *resp.CopyStatus == blob.CopyStatusTypeSuccess {
		return versionOf(dst, resp.ETag)
	}
	return s.awaitCopy(ctx, to, dst, resp.CopyID)
}

// awaitCopy polls dst until the copy with id ends.
func (s *Store) awaitCopy(ctx context.Context, to *blob.Client, dst string, id *string) (store.Version, error) {
	const op = "copy"
	fail := func(cause error) (store.Version, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if id != nil {
			_, _ = to.AbortCopyFromURL(cctx, *id, nil)
		}
		_, _ = to.Delete(cctx, nil)
		return "", &store.OpError{Op: op, Key: dst, Err: cause}
	}
	t := time.NewTicker(copyPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-t.C:
		}
		p, err := to.GetProperties(ctx, nil)
		if err != nil {
			return fail(fmt.Errorf("reading the copy's status: %w", err))
		}
		if id != nil && p.CopyID != nil && *p.CopyID != *id {
			return "", store.Ambiguous(op, dst, fmt.Errorf("azure: another copy (%s) replaced this one (%s)", *p.CopyID, *id))
		}
		if p.CopyStatus == nil {
			return "", store.Ambiguous(op, dst, fmt.Errorf("azure: the destination has no copy status"))
		}
		switch *p.CopyStatus {
		case blob.CopyStatusTypeSuccess:
			return versionOf(dst, p.ETag)
		case blob.CopyStatusTypePending:
		default:
			desc := ""
			if p.CopyStatusDescription != nil {
				desc = *p.CopyStatusDescription
			}
			return fail(fmt.Errorf("azure: the copy ended %s: %s", *p.CopyStatus, desc))
		}
	}
}
