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
	p := &progressDriver{total: total, progress: progress}
	w := store.Wrap(s, func(d store.Driver) store.Driver { p.Driver = d; return p })
	progress(0, total)
	return w, func() { progress(total, total) }, nil
}

// progressDriver is the Middleware of ReadProgress: it counts the bytes of
// every body read through it (whole gets and ranges alike are ranged
// reads to a driver). Its other methods are the inner driver's.
type progressDriver struct {
	store.Driver
	total    int64
	read     atomic.Int64
	progress func(done, total int64)
}

func (p *progressDriver) add(n int) {
	if n <= 0 {
		return
	}
	done := p.read.Add(int64(n))
	p.progress(min(done, p.total), p.total)
}

// NewRangeReader counts the body as it is read.
func (p *progressDriver) NewRangeReader(ctx context.Context, key string, off, n int64, dataOnly bool) (*store.Reader, error) {
	r, err := p.Driver.NewRangeReader(ctx, key, off, n, dataOnly)
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
