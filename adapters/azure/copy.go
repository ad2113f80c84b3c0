package azure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/cellb/cellb/core/store"
)

// copyPoll is how often Copy looks at a copy the service runs in the
// background.
const copyPoll = 200 * time.Millisecond

// Copy is Copy Blob (StartCopyFromURL): the service copies the blob, body,
// metadata and content headers, inside the account. The destination
// carries If-None-Match: *, so an existing blob is never replaced (409
// BlobAlreadyExists or 412), and the request is sent without retries. Copy
// Blob has no size limit (the synchronous Copy Blob From URL stops at 256
// MiB); within one account it usually completes at once, and otherwise
// Copy waits for it, polling the destination's copy status. A copy that
// fails, or whose context ends while it runs, is aborted and its
// destination deleted.
func (d *driver) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	to := d.client.NewBlobClient(dst)
	resp, err := to.StartCopyFromURL(noRetries(ctx), d.client.NewBlobClient(src).URL(), &blob.StartCopyFromURLOptions{
		AccessConditions: accessConditions(store.IfAbsent),
	})
	if err != nil {
		return "", err
	}
	if deref(resp.CopyStatus) == blob.CopyStatusTypeSuccess {
		return version(resp.ETag), nil
	}
	return awaitCopy(ctx, to, dst, resp.CopyID)
}

// awaitCopy polls dst until the copy with id ends. A copy aborted and
// deleted is a definite failure (store.NotApplied), one replaced under it
// an ambiguous one.
func awaitCopy(ctx context.Context, to *blob.Client, dst string, id *string) (store.Version, error) {
	const op = "copy"
	fail := func(cause error) (store.Version, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if id != nil {
			_, _ = to.AbortCopyFromURL(cctx, *id, nil)
		}
		_, _ = to.Delete(cctx, nil)
		return "", store.NotApplied("", cause)
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
		switch deref(p.CopyStatus) {
		case blob.CopyStatusTypeSuccess:
			return version(p.ETag), nil
		case blob.CopyStatusTypePending:
		case "":
			return "", store.Ambiguous(op, dst, errors.New("azure: the destination has no copy status"))
		default:
			return fail(fmt.Errorf("azure: the copy ended %s: %s", *p.CopyStatus, deref(p.CopyStatusDescription)))
		}
	}
}
