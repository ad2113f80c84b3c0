package store

import (
	"context"
	"errors"
	"fmt"
)

// Copier is implemented by stores that copy an object inside the bucket,
// without its bytes passing through the caller: S3 CopyObject, a GCS
// rewrite, an Azure blob copy, a file copy on the same disk. A fork of a
// cell copies its log this way, so that a cell of any size forks in a few
// requests instead of a download and an upload.
//
// Copy creates dst with src's body, metadata and content headers and
// returns dst's new Version. The destination is create-only, always: an
// existing dst gives ErrPreconditionFailed and changes nothing. A missing
// src gives ErrNotFound and creates nothing. A copy that fails leaves no
// dst, or (after ErrAmbiguous) a complete one; never a partial body. The
// copy reads one version of src, even if src is replaced meanwhile.
//
// Callers reach it through the package function Copy, which streams the
// object through the caller on a store without a Copier.
type Copier interface {
	Copy(ctx context.Context, src, dst string) (Version, error)
}

// ErrCopyTooLarge: the store cannot copy an object this large inside the
// bucket. Nothing was written; CopyByStreaming can still copy it.
var ErrCopyTooLarge = errors.New("the object is too large for the store's server-side copy")

// Copy copies src to dst under the rules of Copier: through s's Copier
// when it has one, otherwise with CopyByStreaming.
func Copy(ctx context.Context, s Store, src, dst string) (Version, error) {
	if c, ok := s.(Copier); ok {
		return c.Copy(ctx, src, dst)
	}
	return CopyByStreaming(ctx, s, src, dst)
}

// CopyByStreaming copies src to dst through the caller: a streamed read of
// src into a streamed, create-only write of dst carrying src's metadata
// and content headers. Memory does not grow with the object on a store
// that streams (Streamer).
func CopyByStreaming(ctx context.Context, s Store, src, dst string) (Version, error) {
	if err := ValidateKey(dst); err != nil {
		return "", err
	}
	r, err := NewReader(ctx, s, src)
	if err != nil {
		return "", err
	}
	defer r.Close()
	v, err := PutFrom(ctx, s, dst, r, r.Size, PutOptions{Condition: IfAbsent, Metadata: r.Metadata, Headers: r.Headers})
	if err != nil {
		return "", err
	}
	return v, nil
}

// CopyError wraps err as the failure of copying src to dst (Key names dst;
// the message names both).
func CopyError(src, dst string, err error) error {
	return &OpError{Op: "copy", Key: dst, Err: fmt.Errorf("from %s: %w", src, err)}
}
