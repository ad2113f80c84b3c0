// Package memstore is an in-memory store.Store for tests and simulations.
//
// It keeps the full semantics of the port — create-only and
// compare-and-swap conditions, a fresh version on every write, metadata,
// delimiter listings with continuation tokens, context cancellation and key
// validation — so code tested against it behaves the same on a real bucket.
// It is a store.Driver under a store.Bucket, like every adapter, so the
// validation, range and error rules it follows are the Bucket's. Every byte
// slice and map is copied on the way in and on the way out, so a caller can
// never change a stored object by accident.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
)

// Store is an in-memory bucket, safe for concurrent use. The zero value is
// not usable; call New.
type Store struct {
	*store.Bucket
	d *driver
}

// driver is the bucket itself: the store.Driver under Store's Bucket.
type driver struct {
	clock clock.Clock

	mu      sync.RWMutex
	objects map[string]*object
	keys    []string // every key in objects, in ascending byte order
	writes  uint64   // counts writes; each write's version derives from it
}

// object is one stored version. Its data is never changed once stored
// (a write stores a new object), so readers may share it.
type object struct {
	data     []byte
	version  store.Version
	metadata map[string]string
	headers  store.ContentHeaders
	modified time.Time
}

// Option configures a Store.
type Option func(*driver)

// WithClock sets the clock that stamps Modified times (default: the real
// clock).
func WithClock(c clock.Clock) Option {
	return func(d *driver) { d.clock = c }
}

// New returns an empty Store.
func New(opts ...Option) *Store {
	d := &driver{objects: make(map[string]*object)}
	for _, o := range opts {
		o(d)
	}
	d.clock = clock.Or(d.clock)
	return &Store{Bucket: store.NewBucket(d), d: d}
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Driver = (*driver)(nil)
)

// Len is the number of objects stored.
func (s *Store) Len() int {
	s.d.mu.RLock()
	defer s.d.mu.RUnlock()
	return len(s.d.objects)
}

// NewRangeReader implements store.Driver. The reader holds the version it
// opened, even if the key is written meanwhile.
func (d *driver) NewRangeReader(ctx context.Context, key string, offset, length int64, _ bool) (*store.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	o, ok := d.objects[key]
	if !ok {
		return nil, store.NotFound("get", key)
	}
	size := int64(len(o.data))
	if offset > size {
		return nil, store.ErrInvalidRange
	}
	end := size
	if length >= 0 && length < size-offset {
		end = offset + length
	}
	return &store.Reader{
		Version: o.version, Size: size, Metadata: cloneMetadata(o.metadata), Headers: o.headers, Modified: o.modified,
		Body: io.NopCloser(bytes.NewReader(o.data[offset:end])),
	}, nil
}

// PutFrom implements store.Driver: the body is read to its end before
// the condition is checked and the object published, so a body that fails
// publishes nothing.
func (d *driver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	data, err := readBody(r, size)
	if err != nil {
		return "", err
	}
	o := &object{data: data, metadata: cloneMetadata(opts.Metadata), headers: opts.Headers}
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, exists := d.objects[key]
	switch opts.Condition.Kind {
	case store.Unconditional:
	case store.CreateOnly:
		if exists {
			return "", store.PreconditionFailed("put", key)
		}
	case store.MatchVersion:
		if !exists || cur.version != opts.Condition.Version {
			return "", store.PreconditionFailed("put", key)
		}
	default:
		return "", fmt.Errorf("unknown condition kind %d", opts.Condition.Kind)
	}
	d.publish(key, o)
	return o.version, nil
}

// readBody reads a body of size bytes (-1: unknown) into one allocation
// when the size is known.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	var one [1]byte
	switch n, err := io.ReadFull(r, one[:]); {
	case n > 0:
		return nil, fmt.Errorf("%w: more than %d bytes", store.ErrBodySize, size)
	case err != io.EOF:
		return nil, err
	}
	return data, nil
}

// publish stores o under key with a fresh version. Caller holds d.mu.
func (d *driver) publish(key string, o *object) {
	d.writes++
	o.version = store.Version("m" + strconv.FormatUint(d.writes, 10))
	o.modified = d.clock.Now()
	if _, exists := d.objects[key]; !exists {
		i, _ := slices.BinarySearch(d.keys, key)
		d.keys = slices.Insert(d.keys, i, key)
	}
	d.objects[key] = o
}

// Delete implements store.Driver.
func (d *driver) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.objects[key]; !ok {
		return nil
	}
	delete(d.objects, key)
	if i, found := slices.BinarySearch(d.keys, key); found {
		d.keys = slices.Delete(d.keys, i, i+1)
	}
	return nil
}

// Classify implements store.Driver: the errors memstore makes are already
// portable, and the rest (a cancelled context, a malformed token) are
// nothing more.
func (d *driver) Classify(error) store.ErrorClass { return store.ErrorClass{} }

// Close implements store.Driver; there is nothing to release.
func (d *driver) Close() error { return nil }

func cloneMetadata(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	return maps.Clone(md)
}
