package azure

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/cellb/cellb/core/store"
)

// PutFrom reads up to BlockThreshold bytes of the body first; a body that
// ends there goes in one Put Blob with its MD5. A longer body is staged in
// blocks of BlockSize as it is read, BlockConcurrency blocks in flight,
// and becomes visible only when Put Block List commits them with the
// condition. A body that fails, or a context that ends, stops before the
// commit: the staged blocks stay uncommitted (Azure discards them) and the
// blob is as it was. The write that carries the condition (Put Blob or the
// commit) is sent without the SDK's retries when it is conditional.
func (d *driver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	head, whole, err := store.ReadHead(key, r, size, d.opts.BlockThreshold)
	if err != nil {
		return "", err
	}
	bb := d.client.NewBlockBlobClient(key)
	if !whole {
		return d.commitBlocks(ctx, bb, key, store.ChunksOf(head, d.opts.BlockSize, store.ChunksFrom(r, d.opts.BlockSize)), opts)
	}
	sum := md5.Sum(head)
	resp, err := bb.Upload(conditional(ctx, opts.Condition), streaming.NopCloser(bytes.NewReader(head)), &blockblob.UploadOptions{
		Metadata:                toAzureMetadata(opts.Metadata),
		HTTPHeaders:             httpHeaders(opts.Headers),
		AccessConditions:        accessConditions(opts.Condition),
		TransactionalContentMD5: sum[:],
	})
	if err != nil {
		return "", err
	}
	return version(resp.ETag), nil
}

// conditional turns the SDK's retries off for a conditional write: a
// retried compare-and-swap can meet its own first attempt.
func conditional(ctx context.Context, cond store.Condition) context.Context {
	if cond.IsConditional() {
		return noRetries(ctx)
	}
	return ctx
}

// commitBlocks stages the blocks of next and commits them with Put Block
// List, carrying the condition on the commit, where Azure checks it.
func (d *driver) commitBlocks(ctx context.Context, bb *blockblob.Client, key string, next store.Chunks, opts store.PutOptions) (store.Version, error) {
	ids, err := d.stageBlocks(ctx, bb, next)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return "", d.unpublished(ctx, key, err)
	}
	resp, err := bb.CommitBlockList(conditional(ctx, opts.Condition), ids, &blockblob.CommitBlockListOptions{
		Metadata:         toAzureMetadata(opts.Metadata),
		HTTPHeaders:      httpHeaders(opts.Headers),
		AccessConditions: accessConditions(opts.Condition),
	})
	if err != nil {
		return "", err
	}
	return version(resp.ETag), nil
}

// unpublished reports a failure before the commit. Staged blocks are
// invisible, so nothing was published, even when the body had been read
// to its end, which is all the Bucket can see: store.NotApplied tells it.
func (d *driver) unpublished(ctx context.Context, key string, err error) error {
	var body store.BodyFailure
	switch {
	case errors.As(err, &body):
		err = body.Err
	case ctx.Err() != nil:
		err = ctx.Err()
	}
	return store.NotApplied("staging blocks", err)
}

// maxBlocks is Azure's limit on the committed blocks of one blob.
const maxBlocks = 50000

// stageBlocks stages the blocks of next, BlockConcurrency at a time (so at
// most that many are in memory), and returns the block ids in order. The
// first failure cancels the rest; a failure of the body comes back as a
// store.BodyFailure.
//
// Block IDs start with a random upload id: uncommitted blocks belong to
// the blob, not to a writer, so two writers racing on one key with
// "block 0" each would overwrite each other's staged data and one could
// commit the other's bytes.
func (d *driver) stageBlocks(ctx context.Context, bb *blockblob.Client, next store.Chunks) ([]string, error) {
	var upload [8]byte
	rand.Read(upload[:])
	tag := hex.EncodeToString(upload[:])
	// Every id of a blob must have the same length.
	id := func(i int) string { return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", tag, i)) }
	n, err := store.UploadParts(ctx, next, d.opts.BlockConcurrency, maxBlocks, func(ctx context.Context, i int, part []byte) error {
		sum := md5.Sum(part)
		_, err := bb.StageBlock(ctx, id(i), streaming.NopCloser(bytes.NewReader(part)), &blockblob.StageBlockOptions{
			TransactionalValidation: blob.TransferValidationTypeMD5(sum[:]),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id(i)
	}
	return ids, nil
}
