package tests

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/core/store"
)

// countingStore counts a bucket's requests and the bytes they move, to
// report what an acknowledged write or an activation costs in the bucket.
// It streams where the store streams, so it changes no code path.
type countingStore struct {
	store.Store
	gets, puts, deletes, lists atomic.Int64
	in, out                    atomic.Int64 // bytes written to and read from the bucket
}

type bucketCost struct{ gets, puts, deletes, lists, in, out int64 }

func (s *countingStore) snapshot() bucketCost {
	return bucketCost{s.gets.Load(), s.puts.Load(), s.deletes.Load(), s.lists.Load(), s.in.Load(), s.out.Load()}
}

func (c bucketCost) since(o bucketCost) bucketCost {
	return bucketCost{c.gets - o.gets, c.puts - o.puts, c.deletes - o.deletes, c.lists - o.lists, c.in - o.in, c.out - o.out}
}

func (c bucketCost) requests() int64 { return c.gets + c.puts + c.deletes + c.lists }

// report adds per-op metrics: requests, PUTs and bytes written per op.
func (c bucketCost) report(b *testing.B, ops int, what string) {
	if ops == 0 {
		return
	}
	n := float64(ops)
	b.ReportMetric(float64(c.requests())/n, "bucket-reqs/"+what)
	b.ReportMetric(float64(c.puts)/n, "bucket-puts/"+what)
	b.ReportMetric(float64(c.gets)/n, "bucket-gets/"+what)
	b.ReportMetric(float64(c.lists)/n, "bucket-lists/"+what)
	b.ReportMetric(float64(c.deletes)/n, "bucket-deletes/"+what)
	b.ReportMetric(float64(c.in)/n, "bucket-B-in/"+what)
	b.ReportMetric(float64(c.out)/n, "bucket-B-out/"+what)
}

func (s *countingStore) Get(ctx context.Context, key string) (*store.Object, error) {
	s.gets.Add(1)
	o, err := s.Store.Get(ctx, key)
	if err == nil {
		s.out.Add(int64(len(o.Data)))
	}
	return o, err
}

func (s *countingStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	s.puts.Add(1)
	s.in.Add(int64(len(data)))
	return s.Store.Put(ctx, key, data, opts)
}

func (s *countingStore) Delete(ctx context.Context, key string) error {
	s.deletes.Add(1)
	return s.Store.Delete(ctx, key)
}

func (s *countingStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, opts)
}

func (s *countingStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	s.gets.Add(1)
	r, err := store.NewRangeReader(ctx, s.Store, key, offset, length)
	if err == nil {
		r.Body = countedBody{r.Body, &s.out}
	}
	return r, err
}

func (s *countingStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	s.puts.Add(1)
	return store.PutFrom(ctx, s.Store, key, countedReader{r, &s.in}, size, opts)
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countedBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

type countedReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countedReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

var _ store.Streamer = (*countingStore)(nil)
