// Package heaptest measures what a log or driver holds on the Go heap
// while it streams a large database, for memory tests that must fail when
// an image is held whole: a sampler of the live heap's peak, and a bucket
// double that keeps bodies deflated (synthetic images are mostly zeros, so
// a 200 MiB cell costs the test little) and samples the heap every MiB of a
// streamed body, both ways. Test support, like core/store/memstore.
package heaptest

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// HeapPeak keeps the largest live heap seen at the moments sampled, inside
// the work, where an image-sized buffer would be alive. Each sample
// collects garbage first.
type HeapPeak struct{ max atomic.Uint64 }

// Sample records the live heap now.
func (h *HeapPeak) Sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for {
		old := h.max.Load()
		if ms.HeapAlloc <= old || h.max.CompareAndSwap(old, ms.HeapAlloc) {
			return
		}
	}
}

// Reset starts a measurement and returns its baseline.
func (h *HeapPeak) Reset() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.max.Store(ms.HeapAlloc)
	return ms.HeapAlloc
}

// Max is the largest heap sampled since Reset.
func (h *HeapPeak) Max() uint64 { return h.max.Load() }

// ErrWholeObject is what a Bucket with a MaxWhole answers a whole-object
// Get or a Put larger than MaxWhole.
var ErrWholeObject = errors.New("heaptest: a whole-object Get, or Put of a large object, was used")

// Bucket is an in-memory bucket that keeps bodies deflated and samples
// Peak every MiB of a streamed body, written or read. With MaxWhole ≥ 0 a
// log must stream every large object: whole-object Gets fail, and so do
// whole-object Puts of more than MaxWhole bytes. Sizes in listings are the
// deflated ones.
type Bucket struct {
	*memstore.Store
	Peak *HeapPeak
	// MaxWhole bounds whole-object calls (see Bucket); negative allows
	// them all.
	MaxWhole int
}

const metaSize = "heaptest-size"

// Get implements store.Store.
func (s Bucket) Get(ctx context.Context, key string) (*store.Object, error) {
	if s.MaxWhole >= 0 {
		return nil, ErrWholeObject
	}
	r, err := s.NewRangeReader(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return &store.Object{Key: key, Data: data, Version: r.Version, Metadata: r.Metadata, Modified: r.Modified}, nil
}

// GetData implements store.DataGetter as Get does: a body-only read is a
// whole-object read too (without it, the one memstore has would read the
// deflated bytes).
func (s Bucket) GetData(ctx context.Context, key string) (*store.Object, error) {
	return s.Get(ctx, key)
}

// Put implements store.Store.
func (s Bucket) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if s.MaxWhole >= 0 && len(data) > s.MaxWhole {
		return "", ErrWholeObject
	}
	return s.PutFrom(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

// PutFrom implements store.Streamer.
func (s Bucket) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	var z bytes.Buffer
	zw, _ := flate.NewWriter(&z, flate.BestSpeed)
	n, err := io.Copy(zw, &sampled{r: r, peak: s.Peak})
	if err != nil {
		return "", err
	}
	if size >= 0 && n != size {
		return "", store.ErrBodySize
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	md := map[string]string{metaSize: strconv.FormatInt(n, 10)}
	for k, v := range opts.Metadata {
		md[k] = v
	}
	opts.Metadata = md
	return s.Store.Put(ctx, key, z.Bytes(), opts)
}

// NewRangeReader implements store.Streamer.
func (s Bucket) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	o, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	size, _ := strconv.ParseInt(o.Metadata[metaSize], 10, 64)
	n, err := store.CheckRange("get", key, offset, length, size)
	if err != nil {
		return nil, err
	}
	zr := flate.NewReader(bytes.NewReader(o.Data))
	if _, err := io.CopyN(io.Discard, zr, offset); err != nil {
		return nil, err
	}
	md := map[string]string{}
	for k, v := range o.Metadata {
		if k != metaSize {
			md[k] = v
		}
	}
	return &store.Reader{Key: key, Version: o.Version, Size: size, Metadata: md, Modified: o.Modified,
		Offset: offset, Length: n, Body: io.NopCloser(&sampled{r: io.LimitReader(zr, n), peak: s.Peak})}, nil
}

// sampled samples the heap every MiB read through it.
type sampled struct {
	r    io.Reader
	peak *HeapPeak
	n    int
}

func (r *sampled) Read(p []byte) (int, error) {
	if r.n >= 1<<20 {
		r.peak.Sample()
		r.n = 0
	}
	n, err := r.r.Read(p)
	r.n += n
	return n, err
}
