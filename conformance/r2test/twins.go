package r2test

import (
	"context"
	"io"
	"net/url"
	"testing"

	"github.com/cellb/cellb/conformance/storetest/brokenstore"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

// Twins are the deliberately wrong bindings, each with the cases that
// must reject it: each replaces the harness's binding with core/r2's
// Bucket broken in one thing.
func Twins() []suite.Twin[Harness] {
	var out []suite.Twin[Harness]
	for _, tw := range []struct {
		name, flaw string
		bind       Bind
	}{
		{"drops-envelope", "writes custom metadata as plain user metadata and drops the rest of the record (no celld-r2)", bindWith(func(b *r2.Bucket, s store.Store) Binding { return &dropsEnvelope{b, s} })},
		{"ignores-onlyif", "ignores the onlyIf conditions of Put and Get", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return ignoresOnlyIf{b} })},
		{"stale-etag", "returns, from Put, the ETag of the version it replaced", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return staleEtag{b} })},
		{"decompresses-gzip", "reads gzip-encoded objects decoded, over a store that decompresses them (a GCS client not told to read them compressed)", func(s store.Store, bucket string) (Binding, error) {
			return r2.New(brokenstore.DecompressesGzip(s), bucket)
		}},
		{"headers-in-record-only", "keeps the HTTP fields only in the celld-r2 record, not as the store's own headers", bindOverHeaders(true)},
		{"ignores-store-headers", "reads the HTTP fields from the celld-r2 record only, not from the store's own headers", bindOverHeaders(false)},
		{"ignores-range", "reads the whole object for a ranged Get", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return ignoresRange{b} })},
		{"skips-checksums", "drops the checksums given to Put: nothing is verified or recorded", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return skipsChecksums{b} })},
		{"deletes-first-key", "deletes only the first of the keys given to Delete", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return deletesFirst{b} })},
		{"ignores-delimiter", "lists without the delimiter: no common prefixes", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return ignoresDelimiter{b} })},
		{"fixes-invalid-keys", "writes an empty or over-long key under a key made valid (\"_\", or cut to 1,024 bytes)", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return fixesKeys{b} })},
		{"drops-plain-metadata", "reads no custom metadata from an object stored without celld-r2", bindWith(func(b *r2.Bucket, s store.Store) Binding { return dropsPlainMetadata{b, s} })},
		{"encodes-keys-twice", "percent-encodes keys itself before the binding's encoding", bindWith(func(b *r2.Bucket, _ store.Store) Binding { return encodesTwice{b} })},
	} {
		bind := tw.bind
		out = append(out, suite.Twin[Harness]{Name: tw.name, Flaw: tw.flaw, CaughtBy: twinCaughtBy[tw.name],
			Wrap: func(h Harness) Harness { h.Bind = bind; return h }})
	}
	return out
}

// twinCaughtBy names, for each twin, the cases that must fail on it.
var twinCaughtBy = map[string][]string{
	"drops-envelope":         {"put-get", "format", "multipart"},
	"ignores-onlyif":         {"conditional-put", "conditional-get", "conditional-race"},
	"stale-etag":             {"etag", "conditional-put"},
	"headers-in-record-only": {"store-headers"},
	"decompresses-gzip":      {"gzip-body"},
	"ignores-store-headers":  {"celld-fixture"},
	"ignores-range":          {"range"},
	"skips-checksums":        {"checksums"},
	"deletes-first-key":      {"delete"},
	"ignores-delimiter":      {"list"},
	"fixes-invalid-keys":     {"invalid-keys"},
	"drops-plain-metadata":   {"no-envelope"},
	"encodes-keys-twice":     {"key-encoding"},
}

// RunTwins shows the suite rejects every twin over h's store
// (suite.RunTwins): the cases the twins name must pass on h, then each
// must fail on every twin that names it.
func RunTwins(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	suite.RunTwins(t, h, Twins(), RunReport, opts...)
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

type ignoresRange struct{ *r2.Bucket }

func (i ignoresRange) Get(ctx context.Context, key string, opts r2.GetOptions) (*r2.ObjectBody, error) {
	opts.Range = nil
	return i.Bucket.Get(ctx, key, opts)
}

type skipsChecksums struct{ *r2.Bucket }

func (s skipsChecksums) Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error) {
	opts.Checksums = r2.Checksums{}
	return s.Bucket.Put(ctx, key, body, opts)
}

type deletesFirst struct{ *r2.Bucket }

func (d deletesFirst) Delete(ctx context.Context, keys ...string) error {
	if len(keys) > 1 {
		keys = keys[:1]
	}
	return d.Bucket.Delete(ctx, keys...)
}

type ignoresDelimiter struct{ *r2.Bucket }

func (i ignoresDelimiter) List(ctx context.Context, opts r2.ListOptions) (*r2.Objects, error) {
	opts.Delimiter = ""
	return i.Bucket.List(ctx, opts)
}

// fixesKeys makes every key valid instead of refusing it.
type fixesKeys struct{ *r2.Bucket }

func fixKey(key string) string {
	switch {
	case key == "":
		return "_"
	case len(key) > 1024:
		return key[:1024]
	}
	return key
}

func (f fixesKeys) Head(ctx context.Context, key string) (*r2.Object, error) {
	return f.Bucket.Head(ctx, fixKey(key))
}

func (f fixesKeys) Get(ctx context.Context, key string, opts r2.GetOptions) (*r2.ObjectBody, error) {
	return f.Bucket.Get(ctx, fixKey(key), opts)
}

func (f fixesKeys) Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error) {
	return f.Bucket.Put(ctx, fixKey(key), body, opts)
}

func (f fixesKeys) Delete(ctx context.Context, keys ...string) error {
	fixed := make([]string, len(keys))
	for i, k := range keys {
		fixed[i] = fixKey(k)
	}
	return f.Bucket.Delete(ctx, fixed...)
}

// dropsPlainMetadata reads objects stored without celld-r2 (by another
// tool) with no custom metadata, instead of taking their user metadata.
type dropsPlainMetadata struct {
	*r2.Bucket
	s store.Store
}

func (d dropsPlainMetadata) plain(ctx context.Context, key string) bool {
	o, err := d.s.Get(ctx, d.Key(key))
	if err != nil {
		return false
	}
	_, ok := o.Metadata[r2.MetadataName]
	return !ok
}

func (d dropsPlainMetadata) Head(ctx context.Context, key string) (*r2.Object, error) {
	o, err := d.Bucket.Head(ctx, key)
	if err == nil && d.plain(ctx, key) {
		o.CustomMetadata = nil
	}
	return o, err
}

func (d dropsPlainMetadata) Get(ctx context.Context, key string, opts r2.GetOptions) (*r2.ObjectBody, error) {
	o, err := d.Bucket.Get(ctx, key, opts)
	if err == nil && d.plain(ctx, key) {
		o.CustomMetadata = nil
	}
	return o, err
}

// encodesTwice escapes each key before core/r2 encodes it again, so the
// store holds keys celld cannot find.
type encodesTwice struct{ *r2.Bucket }

func (e encodesTwice) Head(ctx context.Context, key string) (*r2.Object, error) {
	return e.Bucket.Head(ctx, url.PathEscape(key))
}

func (e encodesTwice) Get(ctx context.Context, key string, opts r2.GetOptions) (*r2.ObjectBody, error) {
	return e.Bucket.Get(ctx, url.PathEscape(key), opts)
}

func (e encodesTwice) Put(ctx context.Context, key string, body io.Reader, opts r2.PutOptions) (*r2.Object, error) {
	return e.Bucket.Put(ctx, url.PathEscape(key), body, opts)
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
