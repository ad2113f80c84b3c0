package store

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// UploadParts sends the parts next gives, at most concurrency at a time
// (so at most that many parts are in memory), calling upload with each
// part's index (from 0) and bytes. It stops at the first failure and
// cancels the uploads in flight: a failure of the body (next's error, or
// more than maxParts parts) comes back as a BodyFailure, an upload's as
// "part <i>: <err>". The S3 adapter's multipart upload and the Azure
// adapter's staged blocks send their parts this way.
func UploadParts(ctx context.Context, next Chunks, concurrency, maxParts int, upload func(ctx context.Context, i int, part []byte) error) (parts int, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(concurrency, 1))
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
		if err == nil && i >= maxParts {
			err = fmt.Errorf("the body needs more than %d parts", maxParts)
		}
		if err != nil {
			<-sem
			cancel(BodyFailure{Err: err})
			break
		}
		parts = i + 1
		wg.Go(func() {
			defer func() { <-sem }()
			if err := upload(ctx, i, part); err != nil {
				cancel(fmt.Errorf("part %d: %w", i, err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return parts, nil
}
