package memstore

import (
	"context"
	"slices"
	"strconv"

	"github.com/cellb/cellb/core/store"
)

var _ store.Copier = (*Store)(nil)

// Copy implements store.Copier: under one lock, dst is created with src's
// body, metadata and content headers, only if dst does not exist.
func (s *Store) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	if err := check(ctx, "copy", src); err != nil {
		return "", err
	}
	if err := store.ValidateKey(dst); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	from, ok := s.objects[src]
	if !ok {
		return "", store.NotFound("copy", src)
	}
	if _, exists := s.objects[dst]; exists {
		return "", store.PreconditionFailed("copy", dst)
	}
	s.writes++
	o := &object{
		data:     slices.Clone(from.data),
		metadata: cloneMetadata(from.metadata),
		headers:  from.headers,
		version:  store.Version("m" + strconv.FormatUint(s.writes, 10)),
		modified: s.clock.Now(),
	}
	i, _ := slices.BinarySearch(s.keys, dst)
	s.keys = slices.Insert(s.keys, i, dst)
	s.objects[dst] = o
	return o.version, nil
}
