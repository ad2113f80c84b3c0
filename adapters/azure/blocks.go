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
	return s.commitBlocks(ctx, bb, key, store.ChunksOf(data, s.opts.BlockSize, nil), opts)
}

// commitBlocks stages the blocks of next and commits them with Put Block
// List, carrying the Put's condition on the commit, where Azure checks it.
// Nothing is visible before the commit: a failure of Azure, of the body or
// of the context while staging leaves the blob as it was.
//
// Block IDs start with a random upload id: uncommitted blocks belong to
// the blob, not to a writer, so two writers racing on one key with
// "block 0" each would overwrite each other's staged data and one could
// commit the other's bytes.
func (s *Store) commitBlocks(ctx context.Context, bb *blockblob.Client, key string, next store.Chunks, opts store.PutOptions) (store.Version, error) {
	cond := opts.Condition
	ids, err := s.stageBlocks(ctx, bb, next)
	var berr store.BodyFailure
	if errors.As(err, &berr) {
		return "", store.BodyError("put", key, berr.Err)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		// Staged blocks are invisible until committed: nothing changed.
		return "", &store.OpError{Op: "put", Key: key, Err: fmt.Errorf("staging blocks: %w", err)}
	}
	if err := ctx.Err(); err != nil {
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	wctx := ctx
	if cond.IsConditional() {
		wctx = noRetries(ctx)
	}
	resp, err := bb.CommitBlockList(wctx, ids, &blockblob.CommitBlockListOptions{
		Metadata:         toAzureMetadata(opts.Metadata),
		HTTPHeaders:      httpHeaders(opts.Headers),
		AccessConditions: accessConditions(cond),
	})
	if err != nil {
		return "", writeError(key, cond, err)
	}
	return versionOf(key, resp.ETag)
}

// maxBlocks is Azure's limit on the committed blocks of one blob.
const maxBlocks = 50000

// stageBlocks stages the blocks of next, BlockConcurrency at a time (so at
// most that many are in memory), and returns the block ids in order. The
// first failure cancels the rest; a failure of the body comes back as
// errBlockBody.
func (s *Store) stageBlocks(ctx context.Context, bb *blockblob.Client, next store.Chunks) ([]string, error) {
	var upload [8]byte
	rand.Read(upload[:])
	tag := hex.EncodeToString(upload[:])
	var ids []string
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, s.opts.BlockConcurrency)
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		part, err := next()
		if err == io.EOF {
			<-sem
			break
		}
		if err == nil && i >= maxBlocks {
			err = fmt.Errorf("the body needs more than %d blocks of %d bytes", maxBlocks, s.opts.BlockSize)
		}
		if err != nil {
			<-sem
			cancel(store.BodyFailure{Err: err})
			break
		}
		// Every id of a blob must have the same length.
		id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", tag, i))
		ids = append(ids, id)
		wg.Go(func() {
			defer func() { <-sem }()
			sum := md5.Sum(part)
			_, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(part)), &blockblob.StageBlockOptions{
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
