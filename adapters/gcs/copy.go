package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"

	"github.com/cellb/cellb/core/store"
)

var _ store.Copier = (*Store)(nil)

// Copy implements store.Copier with GCS's rewrite, which copies inside the
// service: the client's Copier calls rewrite until the service says it is
// done (a large object across locations or storage classes takes several
// calls; within one bucket it is usually one). The destination carries
// ifGenerationMatch=0, so an existing object is never replaced (412:
// ErrPreconditionFailed), and the calls are made without retries like
// every conditional write. Without destination attributes the rewrite
// keeps the source's metadata and content headers. With
// Options.StreamCopies it streams instead (store.CopyByStreaming).
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
	if s.streamCopies {
		return store.CopyByStreaming(ctx, s, src, dst)
	}
	to, err := s.conditioned(dst, store.IfAbsent)
	if err != nil {
		return "", err
	}
	attrs, err := to.CopierFrom(s.bucket.Object(src)).Run(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) || status(err) == http.StatusNotFound {
			if r := refusal("get", err); r != nil {
				return "", &store.OpError{Op: op, Key: src, Err: r}
			}
			return "", &store.OpError{Op: op, Key: src, Err: fmt.Errorf("%w: %w", store.ErrNotFound, err)}
		}
		werr := writeError(dst, store.IfAbsent, err)
		if oe, ok := werr.(*store.OpError); ok {
			oe.Op = op
		}
		return "", werr
	}
	if attrs == nil || attrs.Generation <= 0 {
		return "", store.Ambiguous(op, dst, ErrNoVersion)
	}
	return generationVersion(attrs.Generation), nil
}
