package faultstore

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

// Copy implements store.Driver through the wrapped driver (server-side
// when it can). It counts as a Put of dst and gets a Put's faults: a
// dropped request copies nothing, a lost response copies and reports
// ambiguous. When the wrapped driver cannot copy inside the bucket, the
// Bucket streams the copy, which then also counts as the get and the put
// it makes.
func (s *faults) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	p := s.decide(OpPut, dst)
	if err := s.begin(ctx, p); err != nil {
		return "", err
	}
	v, err := s.inner.Copy(ctx, src, dst)
	if err == nil {
		info := &store.ObjectInfo{Key: dst, Version: v, Modified: s.clock.Now()}
		if r, rerr := s.inner.NewRangeReader(context.WithoutCancel(ctx), dst, 0, 0, true); rerr == nil {
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
