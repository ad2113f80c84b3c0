package faultstore

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

var _ store.Copier = (*Store)(nil)

// Copy implements store.Copier through the wrapped store (server-side when
// it can). It counts as a Put of dst and gets a Put's faults: a dropped
// request copies nothing, a lost response copies and reports ambiguous.
func (s *Store) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	p := s.decide(OpPut, dst)
	if err := s.begin(ctx, p); err != nil {
		return "", err
	}
	v, err := store.Copy(ctx, s.inner, src, dst)
	if err == nil {
		info := &store.ObjectInfo{Key: dst, Version: v, Modified: s.clock.Now()}
		if r, rerr := store.NewRangeReader(context.WithoutCancel(ctx), s.inner, dst, 0, 0); rerr == nil {
			info.Size = r.Size
			r.Close()
		}
		s.recordWrite(dst, info)
	}
	if p.lose {
		s.log(p, "lost response")
		return "", store.Ambiguous("copy", dst, ErrLostResponse)
	}
	return v, err
}
