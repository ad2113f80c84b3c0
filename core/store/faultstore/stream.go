package faultstore

import (
	"context"
	"io"

	"github.com/cellb/cellb/core/store"
)

// NewRangeReader implements store.Driver. It counts as a Get and gets a
// Get's faults (a whole-object Get and a body-only read are ranged reads
// to the driver too); a scripted Fail with AfterBytes lets the call
// succeed and fails its stream after that many bytes.
func (s *faults) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*store.Reader, error) {
	p := s.decide(OpGet, key)
	failAfter, ferr := p.failAfter, p.fail
	if failAfter > 0 {
		p.fail = nil
	}
	if err := s.begin(ctx, p); err != nil {
		return nil, err
	}
	r, err := s.inner.NewRangeReader(ctx, key, offset, length, dataOnly)
	if err != nil || failAfter <= 0 {
		return r, err
	}
	s.log(p, "stream fails mid-body")
	r.Body = &failingBody{Reader: r.Body, left: failAfter, err: &store.OpError{Op: "get", Key: key, Err: ferr}, closer: r.Body}
	return r, nil
}

// PutFrom implements store.Driver. It counts as a Put and gets a Put's
// faults (a whole-object Put is streamed to the driver too); a scripted
// Fail with AfterBytes hands the wrapped driver a body that fails after
// that many bytes, so the wrapped store must publish nothing.
func (s *faults) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	p := s.decide(OpPut, key)
	failAfter, ferr := p.failAfter, p.fail
	if failAfter > 0 {
		p.fail = nil
		s.log(p, "body fails mid-stream")
		r = &failingBody{Reader: r, left: failAfter, err: ferr}
	}
	if err := s.begin(ctx, p); err != nil {
		return "", err
	}
	cr := &countingReader{r: r}
	v, err := s.inner.PutFrom(ctx, key, cr, size, opts)
	if err == nil {
		s.recordWrite(key, &store.ObjectInfo{Key: key, Size: cr.n, Version: v, Modified: s.clock.Now()})
	}
	if p.lose {
		s.log(p, "lost response")
		return "", store.Ambiguous("put", key, ErrLostResponse)
	}
	return v, err
}

// failingBody passes left bytes through, then fails with err.
type failingBody struct {
	io.Reader
	left   int64
	err    error
	closer io.Closer
}

func (f *failingBody) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, f.err
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.Reader.Read(p)
	f.left -= int64(n)
	if err == io.EOF && f.left <= 0 {
		err = nil // the failure comes before the end
	}
	return n, err
}

func (f *failingBody) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
