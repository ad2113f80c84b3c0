//go:build unix

package fs

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

var _ store.Copier = (*Store)(nil)

// Copy implements store.Copier as a file copy on the store's own disk: the
// source's open file (one version, whatever replaces it meanwhile) is
// copied into a temporary file, which is published create-only with the
// source's metadata and content headers exactly as a streamed Put is
// (fsynced, renamed under the key's lock, directory fsynced). Nothing
// crosses a network, and a failed copy publishes nothing.
func (s *Store) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	if err := checkKey("copy", dst); err != nil {
		return "", err
	}
	r, err := s.NewRangeReader(ctx, src, 0, -1)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return s.PutFrom(ctx, dst, r.Body, r.Size, store.PutOptions{Condition: store.IfAbsent, Metadata: r.Metadata, Headers: r.Headers})
}
