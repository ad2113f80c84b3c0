// Package memstore is an in-memory store.Store for tests and simulations.
//
// It keeps the full semantics of the port — create-only and
// compare-and-swap conditions, a fresh version on every write, metadata,
// delimiter listings with continuation tokens, context cancellation and key
// validation — so code tested against it behaves the same on a real bucket.
// Every byte slice and map is copied on the way in and on the way out, so a
// caller can never change a stored object by accident.
package memstore

import (
	"bytes"
	"context"
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
	clock clock.Clock

	mu      sync.RWMutex
	objects map[string]*object
	keys    []string // every key in objects, in ascending byte order
	writes  uint64   // counts writes; each write's version derives from it
}

type object struct {
	data     []byte
	version  store.Version
	metadata map[string]string
	headers  store.ContentHeaders
	modified time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps Modified times (default: the real
// clock).
func WithClock(c clock.Clock) Option {
	return func(s *Store) { s.clock = c }
}

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{objects: make(map[string]*object)}
	for _, o := range opts {
		o(s)
	}
	s.clock = clock.Or(s.clock)
	return s
}

var _ store.Store = (*Store)(nil)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := check(ctx, "get", key); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objects[key]
	if !ok {
		return nil, store.NotFound("get", key)
	}
	return &store.Object{
		Key:      key,
		Data:     slices.Clone(o.data),
		Version:  o.version,
		Metadata: cloneMetadata(o.metadata),
		Headers:  o.headers,
		Modified: o.modified,
	}, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if err := check(ctx, "put", key); err != nil {
		return "", err
	}
	if err := store.ValidatePutOptions(opts); err != nil {
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	// Copy before taking the lock: large bodies should not stall readers.
	o := &object{data: slices.Clone(data), metadata: cloneMetadata(opts.Metadata), headers: opts.Headers}
	if o.data == nil {
		o.data = []byte{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, exists := s.objects[key]
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
		return "", &store.OpError{Op: "put", Key: key, Err: errUnknownCondition(opts.Condition.Kind)}
	}
	s.writes++
	o.version = store.Version("m" + strconv.FormatUint(s.writes, 10))
	o.modified = s.clock.Now()
	if !exists {
		i, _ := slices.BinarySearch(s.keys, key)
		s.keys = slices.Insert(s.keys, i, key)
	}
	s.objects[key] = o
	return o.version, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := check(ctx, "delete", key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		return nil
	}
	delete(s.objects, key)
	if i, found := slices.BinarySearch(s.keys, key); found {
		s.keys = slices.Delete(s.keys, i, i+1)
	}
	return nil
}

// Len is the number of objects stored.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.objects)
}

func check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return &store.OpError{Op: op, Key: key, Err: err}
	}
	return store.ValidateKey(key)
}

func cloneMetadata(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	return maps.Clone(md)
}

type errUnknownCondition store.ConditionKind

func (e errUnknownCondition) Error() string {
	return "unknown condition kind " + strconv.Itoa(int(e))
}

var _ store.Streamer = (*Store)(nil)

// NewRangeReader implements store.Streamer. The range is copied out under
// the read lock, so the reader holds the version it opened.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	if err := check(ctx, "get", key); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objects[key]
	if !ok {
		return nil, store.NotFound("get", key)
	}
	n, err := store.CheckRange("get", key, offset, length, int64(len(o.data)))
	if err != nil {
		return nil, err
	}
	return &store.Reader{
		Key: key, Version: o.version, Size: int64(len(o.data)), Metadata: cloneMetadata(o.metadata), Headers: o.headers, Modified: o.modified,
		Offset: offset, Length: n,
		Body: io.NopCloser(bytes.NewReader(slices.Clone(o.data[offset : offset+n]))),
	}, nil
}

// PutFrom implements store.Streamer: the body is read to its end before
// the condition is checked and the object published, so a body that fails
// publishes nothing.
func (s *Store) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if err := check(ctx, "put", key); err != nil {
		return "", err
	}
	data, err := store.ReadBody(ctx, "put", key, r, size)
	if err != nil {
		return "", err
	}
	return s.Put(ctx, key, data, opts)
}
