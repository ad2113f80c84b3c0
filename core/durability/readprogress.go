package durability

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/cellb/cellb/core/store"
)

// ReadProgress is for restores that read a log without reporting progress
// of their own (the changeset log, backups): it lists the objects under
// prefix once for the total, reports (0, total), and returns s wrapped so
// that every byte read through it (whole gets and streamed ranges) moves
// progress on. Call the returned done after a successful restore: it
// reports the end (total, total), since a restore may read only part of
// what is listed (the newest epoch, the newest backup). Without progress it
// returns s itself.
func ReadProgress(ctx context.Context, s store.Store, prefix string, progress func(done, total int64)) (_ store.Store, done func(), err error) {
	if progress == nil {
		return s, func() {}, nil
	}
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: prefix})
	if err != nil {
		return nil, nil, err
	}
	var total int64
	for _, o := range page.Objects {
		total += o.Size
	}
	r := &progressStore{Store: s, total: total, progress: progress}
	progress(0, total)
	return r, func() { progress(total, total) }, nil
}

// progressStore counts the bytes read through it.
type progressStore struct {
	store.Store
	total    int64
	read     atomic.Int64
	progress func(done, total int64)
}

func (p *progressStore) add(n int) {
	if n <= 0 {
		return
	}
	done := p.read.Add(int64(n))
	p.progress(min(done, p.total), p.total)
}

func (p *progressStore) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := p.Store.Get(ctx, key)
	if err == nil {
		p.add(len(o.Data))
	}
	return o, err
}

// NewRangeReader keeps the inner store's streaming (store.Streamer).
func (p *progressStore) NewRangeReader(ctx context.Context, key string, off, n int64) (*store.Reader, error) {
	r, err := store.NewRangeReader(ctx, p.Store, key, off, n)
	if err == nil {
		r.Body = &countingBody{ReadCloser: r.Body, add: p.add}
	}
	return r, err
}

type countingBody struct {
	io.ReadCloser
	add func(int)
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.add(n)
	return n, err
}

// PutFrom passes through, so the wrapper is a store.Streamer as the inner
// store may be.
func (p *progressStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return store.PutFrom(ctx, p.Store, key, r, size, opts)
}

// Copy passes through (store.Copier): a copy inside the bucket reads
// nothing through the node.
func (p *progressStore) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	return store.Copy(ctx, p.Store, src, dst)
}
