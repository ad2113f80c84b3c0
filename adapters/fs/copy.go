//go:build unix

package fs

import (
	"context"
	"errors"

	"github.com/cellb/cellb/core/store"
)

// Copy implements store.Driver as a file copy on the store's own disk: the
// source's open file (one version, whatever replaces it meanwhile) is
// copied into a temporary file, which is published create-only with the
// source's metadata and content headers exactly as a streamed Put is
// (fsynced, renamed under the key's lock, directory fsynced). Nothing
// crosses a network, and a failed copy publishes nothing.
func (s *driver) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	if err := checkKey(dst); err != nil {
		return "", err
	}
	r, err := s.NewRangeReader(ctx, src, 0, -1, false)
	if errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if err != nil {
		return "", store.NotApplied("reading the source", err)
	}
	defer r.Body.Close()
	// The source is read through store.Body, so that a file another
	// program shortens meanwhile is not copied as complete.
	return s.PutFrom(ctx, dst, store.Body(ctx, r.Body, r.Size), r.Size, store.PutOptions{Condition: store.IfAbsent, Metadata: r.Metadata, Headers: r.Headers})
}
