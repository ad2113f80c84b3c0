package r2test

import (
	"context"
	"io"

	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

// Twin is a binding with one flaw, for showing that the suite rejects it.
type Twin struct {
	Name string
	Flaw string
	Bind Bind
}

// Twins are the deliberately wrong bindings. Each wraps core/r2's Bucket
// and breaks one thing.
func Twins() []Twin {
	return []Twin{
		{"drops-envelope", "writes custom metadata as plain user metadata and drops the rest of the record (no celld-r2)", bindWith(func(b *r2.Bucket, s store.Store) Binding { return &dropsEnvelope{b, s} })},
		{"ignores-onlyif", "ignores the onlyIf conditions of Put and Get", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return ignoresOnlyIf{b} })},
		{"stale-etag", "returns, from Put, the ETag of the version it replaced", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return staleEtag{b} })},
		{"headers-in-record-only", "keeps the HTTP fields only in the celld-r2 record, not as the store's own headers", bindOverHeaders(true)},
		{"ignores-store-headers", "reads the HTTP fields from the celld-r2 record only, not from the store's own headers", bindOverHeaders(false)},
	}
}

func bindWith(f func(*r2.Bucket, store.Store) Binding) Bind {
	return func(s store.Store, bucket string) (Binding, error) {
		b, err := r2.New(s, bucket)
		if err != nil {
			return nil, err
		}
		return f(b, s), nil
	}
}

type dropsEnvelope struct {
	*r2.Bucket
	s store.Store
}

func (d *dropsEnvelope) Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error) {
	if err := d.ValidateKey(key); err != nil {
		return nil, err
	}
	if _, err := store.PutFrom(ctx, d.s, d.Key(key), body, -1, store.PutOptions{Metadata: opts.CustomMetadata}); err != nil {
		return nil, err
	}
	return d.Head(ctx, key)
}

func (d *dropsEnvelope) CreateMultipartUpload(ctx context.Context, key string, opts r2.PutOptions) (*r2.MultipartUpload, error) {
	return d.Bucket.CreateMultipartUpload(ctx, key, r2.PutOptions{})
}

type ignoresOnlyIf struct{ *r2.Bucket }

func (i ignoresOnlyIf) Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error) {
	opts.OnlyIf = nil
	return i.Bucket.Put(ctx, key, body, opts)
}

func (i ignoresOnlyIf) Get(ctx context.Context, key string, opts r2.GetOptions) (*r2.ObjectBody, error) {
	opts.OnlyIf = nil
	return i.Bucket.Get(ctx, key, opts)
}

type staleEtag struct{ *r2.Bucket }

func (s staleEtag) Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error) {
	before, _ := s.Head(ctx, key)
	o, err := s.Bucket.Put(ctx, key, body, opts)
	if err != nil || before == nil {
		return o, err
	}
	o.Version, o.ETag, o.HTTPETag = before.Version, before.ETag, before.HTTPETag
	return o, nil
}

// headerStore gives the binding's store one flaw with content headers:
// it drops them from writes (the binding then keeps the HTTP fields only
// in its record), or from reads (the binding then sees only the record's).
type headerStore struct {
	store.Store
	onWrite bool
}

func (h headerStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if h.onWrite {
		opts.Headers = store.ContentHeaders{}
	}
	return h.Store.Put(ctx, key, data, opts)
}

func (h headerStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if h.onWrite {
		opts.Headers = store.ContentHeaders{}
	}
	return store.PutFrom(ctx, h.Store, key, r, size, opts)
}

func (h headerStore) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := h.Store.Get(ctx, key)
	if err == nil && !h.onWrite {
		o.Headers = store.ContentHeaders{}
	}
	return o, err
}

func (h headerStore) NewRangeReader(ctx context.Context, key string, off, n int64) (*store.Reader, error) {
	r, err := store.NewRangeReader(ctx, h.Store, key, off, n)
	if err == nil && !h.onWrite {
		r.Headers = store.ContentHeaders{}
	}
	return r, err
}

func bindOverHeaders(onWrite bool) Bind {
	return func(s store.Store, bucket string) (Binding, error) {
		return r2.New(headerStore{s, onWrite}, bucket)
	}
}
