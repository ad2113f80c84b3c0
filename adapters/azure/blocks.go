package azure

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/cellb/cellb/core/store"
)

// putBlocks stages data in blocks and commits them with Put Block List,
// carrying the Put's condition on the commit, where Azure checks it.
//
// Block IDs start with a random upload id: uncommitted blocks belong to
// the blob, not to a writer, so two writers racing on one key with
// "block 0" each would overwrite each other's staged data and one could
// commit the other's bytes.
func (s *Store) putBlocks(ctx context.Context, bb *blockblob.Client, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	cond := opts.Condition
	ids, err := s.stageBlocks(ctx, bb, data)
	if err != nil {
		// Staged blocks are invisible until committed: nothing changed.
		return "", &store.OpError{Op: "put", Key: key, Err: fmt.Errorf("staging blocks: %w", err)}
	}
	wctx := ctx
	if cond.IsConditional() {
		wctx = noRetries(ctx)
	}
	resp, err := bb.CommitBlockList(wctx, ids, &blockblob.CommitBlockListOptions{
		Metadata:         toAzureMetadata(opts.Metadata),
		AccessConditions: accessConditions(cond),
	})
	if err != nil {
		return "", writeError(key, cond, err)
	}
	return versionOf(key, resp.ETag)
}

// stageBlocks uploads data in BlockSize pieces, BlockConcurrency at a time,
// and returns the block ids in order. The first failure cancels the rest.
func (s *Store) stageBlocks(ctx context.Context, bb *blockblob.Client, data []byte) ([]string, error) {
	var upload [8]byte
	rand.Read(upload[:])
	tag := hex.EncodeToString(upload[:])
	size := s.opts.BlockSize
	n := int((int64(len(data)) + size - 1) / size)
	ids := make([]string, n)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, s.opts.BlockConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		lo := int64(i) * size
		hi := min(lo+size, int64(len(data)))
		// Every id of a blob must have the same length.
		ids[i] = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", tag, i))
		wg.Go(func() {
			defer func() { <-sem }()
			part := data[lo:hi]
			sum := md5.Sum(part)
			_, err := bb.StageBlock(ctx, ids[i], streaming.NopCloser(bytes.NewReader(part)), &blockblob.StageBlockOptions{
				TransactionalValidation: blob.TransferValidationTypeMD5(sum[:]),
			})
			if err != nil {
				cancel(fmt.Errorf("block %d: %w", i, err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return ids, nil
}
