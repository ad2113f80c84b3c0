package r2

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/layout"
	"hash"
	"io"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// MaxKeyLen is R2's longest key, in bytes.
const MaxKeyLen = 1024

// keyPrefix is where the objects of bucket live in the store (celld's
// r2/<bucket_name>/<key>).
func keyPrefix(bucket string) string { return layout.R2BucketPrefix(bucket) }

// Bucket is one R2 bucket (a binding's bucket_name) in a Store. It is safe
// for concurrent use and holds no state besides its name.
type Bucket struct {
	s    store.Store
	name string
	gate WriteGate // nil: writes run as they are
}

// New returns the bucket name in s. The name is one path segment of the
// store's keys: non-empty, without '/'.
func New(s store.Store, name string) (*Bucket, error) {
	if name == "" || strings.Contains(name, "/") || store.ValidateKey(layout.R2Prefix+name) != nil {
		return nil, fmt.Errorf("r2: %w %q: it must be one non-empty key segment", ErrInvalidBucket, name)
	}
	return &Bucket{s: s, name: name}, nil
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Key is the store key of an object's key: r2/<bucket>/<key>, the key
// percent-encoded as celld stores it (EncodeKey).
func (b *Bucket) Key(key string) string { return keyPrefix(b.name) + EncodeKey(key) }

// ValidateKey checks key as R2 does (not empty, at most MaxKeyLen bytes)
// and that the store key it lives under, encoded, is one every adapter
// accepts (at most store.MaxKeyLen bytes).
func (b *Bucket) ValidateKey(key string) error {
	switch {
	case key == "":
		return &KeyError{Key: key, Reason: "empty key"}
	case len(key) > MaxKeyLen:
		return &KeyError{Key: key, Reason: fmt.Sprintf("%d bytes is longer than %d", len(key), MaxKeyLen)}
	case len(b.Key(key)) > store.MaxKeyLen:
		return &KeyError{Key: key, Reason: fmt.Sprintf("its bucket key %s… is %d bytes once encoded, longer than the store's %d", layout.R2BucketPrefix(b.name), len(b.Key(key)), store.MaxKeyLen)}
	}
	if err := store.ValidateKey(b.Key(key)); err != nil {
		var oe *store.OpError
		reason := err.Error()
		if errors.As(err, &oe) {
			reason = oe.Err.Error()
		}
		return &KeyError{Key: key, Reason: "the bucket key " + b.Key(key) + " is not acceptable: " + reason}
	}
	return nil
}

// objectOf builds an Object from a store reader's attributes.
func (b *Bucket) objectOf(key string, r *store.Reader) (*Object, error) {
	o := &Object{
		Key: key, Version: string(r.Version), ETag: etagOf(string(r.Version)),
		Size: r.Size, Uploaded: r.Modified,
	}
	o.HTTPETag = `"` + o.ETag + `"`
	if err := decodeRecord(o, r.Metadata, r.Headers); err != nil {
		return nil, &MetadataError{Bucket: b.name, Key: key, Reason: err.Error()}
	}
	return o, nil
}

func (b *Bucket) notFound(key string) error { return &NotFoundError{Bucket: b.name, Key: key} }

// open opens a range of key; a missing object gives *NotFoundError.
func (b *Bucket) open(ctx context.Context, key string, off, n int64) (*store.Reader, *Object, error) {
	return b.openStored(ctx, b.Key(key), key, off, n)
}

// openStored is open of the store key stored, which holds key.
func (b *Bucket) openStored(ctx context.Context, stored, key string, off, n int64) (*store.Reader, *Object, error) {
	r, err := store.NewRangeReader(ctx, b.s, stored, off, n)
	if store.IsNotFound(err) {
		return nil, nil, b.notFound(key)
	}
	if err != nil {
		return nil, nil, err
	}
	o, err := b.objectOf(key, r)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, o, nil
}

// Head returns the object's record without its body.
func (b *Bucket) Head(ctx context.Context, key string) (*Object, error) {
	if err := b.ValidateKey(key); err != nil {
		return nil, err
	}
	r, o, err := b.open(ctx, key, 0, 0)
	if err != nil {
		return nil, err
	}
	r.Close()
	return o, nil
}

// GetOptions are Get's options.
type GetOptions struct {
	OnlyIf *Conditional
	Range  *Range
}

// Get opens the object (or a range of it). A condition that fails gives
// *PreconditionFailedError carrying the object's record; the condition and
// the body are of the same version.
func (b *Bucket) Get(ctx context.Context, key string, opts GetOptions) (*ObjectBody, error) {
	if err := b.ValidateKey(key); err != nil {
		return nil, err
	}
	r, o, err := b.openRange(ctx, key, opts.Range)
	if err != nil {
		return nil, err
	}
	if why := opts.OnlyIf.check(o); why != "" {
		r.Close()
		return nil, &PreconditionFailedError{Bucket: b.name, Key: key, Object: o, Reason: why}
	}
	if opts.Range != nil {
		o.Range = &Range{Offset: r.Offset, Length: r.Length}
	}
	return &ObjectBody{Object: o, Body: r}, nil
}

// openRange opens the range rg (nil: the whole body) of key. A suffix
// needs the object's size first: when the object is replaced between that
// read and the ranged one, the range is computed again for the new
// version, so the bytes always come from the version the record describes.
func (b *Bucket) openRange(ctx context.Context, key string, rg *Range) (*store.Reader, *Object, error) {
	if rg == nil {
		return b.open(ctx, key, 0, -1)
	}
	if rg.Offset < 0 || rg.Length < 0 || rg.Suffix < 0 {
		return nil, nil, &MetadataError{Bucket: b.name, Key: key, Reason: fmt.Sprintf("invalid range %+v", *rg)}
	}
	if rg.Suffix == 0 {
		n := rg.Length
		if n == 0 {
			n = -1
		}
		return b.open(ctx, key, rg.Offset, n)
	}
	for attempt := 1; ; attempt++ {
		head, err := b.Head(ctx, key)
		if err != nil {
			return nil, nil, err
		}
		r, o, err := b.open(ctx, key, max(head.Size-rg.Suffix, 0), -1)
		if err != nil || o.Version == head.Version || attempt == maxPutAttempts {
			return r, o, err
		}
		r.Close()
	}
}

// PutOptions are Put's options.
type PutOptions struct {
	OnlyIf         *Conditional
	HTTPMetadata   HTTPMetadata
	CustomMetadata map[string]string
	// Checksums the body must have; each one given is verified while the
	// body streams, and a mismatch writes nothing (*ChecksumError).
	Checksums Checksums
	// StorageClass is recorded when given (objects without one read as
	// "Standard").
	StorageClass string
	// Size is the body's exact length when known; 0 or negative: unknown
	// (the store then streams without a declared length).
	Size int64
}

// maxPutAttempts bounds how often Put re-checks a condition whose object
// changed between the check and the write.
const maxPutAttempts = 8

// Put writes the object from body and returns its record: a body of at
// most SinglePutMax bytes in one request with its MD5 recorded, a larger
// one streamed (store.PutFrom). A condition that fails gives *PreconditionFailedError and
// writes nothing. Conditions are atomic: the write is made conditional on
// the exact version they were checked against (or on no object), and
// re-checked if the object changed meanwhile.
func (b *Bucket) Put(ctx context.Context, key string, body io.Reader, opts PutOptions) (*Object, error) {
	var o *Object
	err := b.gated(ctx, func(ctx context.Context) (err error) {
		o, err = b.put(ctx, key, body, opts)
		return err
	})
	return o, err
}

func (b *Bucket) put(ctx context.Context, key string, body io.Reader, opts PutOptions) (*Object, error) {
	if err := b.ValidateKey(key); err != nil {
		return nil, err
	}
	if body == nil {
		body = strings.NewReader("")
	}
	// A body of at most SinglePutMax bytes is one request with its MD5
	// recorded, as celld (and R2) record it; a larger one streams, and its
	// record carries only the checksums the caller gave, since the record
	// is written before the body.
	// The buffer grows with the body: a small put allocates little.
	head, err := io.ReadAll(io.LimitReader(body, SinglePutMax+1))
	switch {
	case err != nil:
		return nil, store.BodyError("put", b.Key(key), err)
	case len(head) <= SinglePutMax:
		return b.putOnce(ctx, key, head, opts)
	}
	size := opts.Size
	if size <= 0 {
		size = -1
	}
	return b.putStream(ctx, key, io.MultiReader(bytes.NewReader(head), body), size, opts)
}

// SinglePutMax is the largest body Put reads whole (celld's part size):
// it is written in one request and its MD5 is recorded.
const SinglePutMax = 8 << 20

// record renders opts' record with checksums sums, checked against the
// store's metadata rules.
func (b *Bucket) record(key string, opts PutOptions, sums Checksums) (map[string]string, error) {
	rec, err := encodeRecord(opts.CustomMetadata, opts.HTTPMetadata, sums, opts.StorageClass)
	if err != nil {
		return nil, &MetadataError{Bucket: b.name, Key: key, Reason: err.Error()}
	}
	md := map[string]string{MetadataName: rec}
	if err := store.ValidateMetadata(md); err != nil {
		return nil, &MetadataError{Bucket: b.name, Key: key, Reason: fmt.Sprintf("the record does not fit the store's metadata (%d bytes): %v", len(rec), err)}
	}
	if err := store.ValidateHeaders(storeHeaders(opts.HTTPMetadata)); err != nil {
		return nil, &MetadataError{Bucket: b.name, Key: key, Reason: fmt.Sprintf("the HTTP metadata cannot be the store's own headers: %v", err)}
	}
	return md, nil
}

// putOnce writes a small body in one request, its checksums computed
// (MD5 always) and checked before anything is sent.
func (b *Bucket) putOnce(ctx context.Context, key string, data []byte, opts PutOptions) (*Object, error) {
	if opts.Size > 0 && opts.Size != int64(len(data)) {
		return nil, store.BodyError("put", b.Key(key), fmt.Errorf("%w: %d bytes, declared %d", store.ErrBodySize, len(data), opts.Size))
	}
	cb := newChecked(b, key, bytes.NewReader(data), opts.Checksums, int64(len(data)))
	sum := md5.New()
	if _, err := io.Copy(sum, cb); err != nil {
		return nil, err
	}
	sums := opts.Checksums
	sums.MD5 = sum.Sum(nil)
	md, err := b.record(key, opts, sums)
	if err != nil {
		return nil, err
	}
	return b.putWith(ctx, key, opts, sums, func(cond store.Condition) (store.Version, int64, bool, error) {
		v, err := b.s.Put(ctx, b.Key(key), data, store.PutOptions{Condition: cond, Metadata: md, Headers: storeHeaders(opts.HTTPMetadata)})
		return v, int64(len(data)), false, err
	})
}

// putStream streams a large body, checking the given checksums on the
// way; a mismatch fails the body so the store publishes nothing.
func (b *Bucket) putStream(ctx context.Context, key string, body io.Reader, size int64, opts PutOptions) (*Object, error) {
	md, err := b.record(key, opts, opts.Checksums)
	if err != nil {
		return nil, err
	}
	return b.putWith(ctx, key, opts, opts.Checksums, func(cond store.Condition) (store.Version, int64, bool, error) {
		cb := newChecked(b, key, body, opts.Checksums, size)
		v, err := store.PutFrom(ctx, b.s, b.Key(key), cb, size, store.PutOptions{Condition: cond, Metadata: md, Headers: storeHeaders(opts.HTTPMetadata)})
		if cb.mismatch != nil {
			return "", cb.n, cb.started, cb.mismatch
		}
		return v, cb.n, cb.started, err
	})
}

// putWith runs write under opts.OnlyIf: the condition is checked against
// the current object and the write is made conditional on that exact
// state, and checked again when the object changed in between (while the
// body has not been read yet). write returns the new version, the bytes
// written and whether it read any of the body.
func (b *Bucket) putWith(ctx context.Context, key string, opts PutOptions, sums Checksums,
	write func(store.Condition) (store.Version, int64, bool, error)) (*Object, error) {
	for attempt := 1; ; attempt++ {
		cond, err := b.putCondition(ctx, key, opts.OnlyIf)
		if err != nil {
			return nil, err
		}
		v, size, started, err := write(cond)
		var ce *ChecksumError
		if errors.As(err, &ce) {
			return nil, ce
		}
		if store.IsPreconditionFailed(err) && opts.OnlyIf != nil && !started && attempt < maxPutAttempts {
			continue // the object changed between the check and the write
		}
		if store.IsPreconditionFailed(err) {
			return nil, &PreconditionFailedError{Bucket: b.name, Key: key, Reason: "the object changed while the condition was checked"}
		}
		if err != nil {
			return nil, err
		}
		o := &Object{
			Key: key, Version: string(v), ETag: etagOf(string(v)), Size: size,
			HTTPMetadata: opts.HTTPMetadata, Checksums: sums, StorageClass: opts.StorageClass,
		}
		if o.StorageClass == "" {
			o.StorageClass = "Standard"
		}
		o.HTTPETag = `"` + o.ETag + `"`
		if len(opts.CustomMetadata) > 0 {
			o.CustomMetadata = opts.CustomMetadata
		}
		if head, err := b.Head(ctx, key); err == nil && head.Version == o.Version {
			o.Uploaded = head.Uploaded
		}
		return o, nil
	}
}

// putCondition checks c against the current object and returns the store
// condition that makes the write happen only on that same state.
func (b *Bucket) putCondition(ctx context.Context, key string, c *Conditional) (store.Condition, error) {
	if c == nil {
		return store.Condition{}, nil
	}
	if *c == (Conditional{EtagDoesNotMatch: "*"}) {
		return store.IfAbsent, nil
	}
	cur, err := b.Head(ctx, key)
	if errors.Is(err, ErrNotFound) {
		cur, err = nil, nil
	}
	if err != nil {
		return store.Condition{}, err
	}
	if why := c.check(cur); why != "" {
		return store.Condition{}, &PreconditionFailedError{Bucket: b.name, Key: key, Object: cur, Reason: why}
	}
	if cur == nil {
		return store.IfAbsent, nil
	}
	return store.IfVersion(store.Version(cur.Version)), nil
}

// checked hashes a body as it streams and fails its end when a given
// checksum does not match, so the store never publishes the object.
type checked struct {
	b       *Bucket
	key     string
	r       io.Reader
	want    map[string][]byte
	hashes  map[string]hash.Hash
	n       int64
	size    int64 // declared, or -1
	started bool
	// mismatch is set when the body ended with a wrong checksum.
	mismatch *ChecksumError
	verified bool
}

func newChecked(b *Bucket, key string, r io.Reader, sums Checksums, size int64) *checked {
	c := &checked{b: b, key: key, r: r, size: size, want: map[string][]byte{}, hashes: map[string]hash.Hash{}}
	news := map[string]func() hash.Hash{"md5": md5.New, "sha1": sha1.New, "sha256": sha256.New, "sha384": sha512.New384, "sha512": sha512.New}
	for name, v := range sums.byName() {
		if len(v) > 0 {
			c.want[name] = v
			c.hashes[name] = news[name]()
		}
	}
	return c
}

func (c *checked) Read(p []byte) (int, error) {
	if c.mismatch != nil {
		return 0, c.mismatch
	}
	c.started = true
	n, err := c.r.Read(p)
	c.n += int64(n)
	for _, h := range c.hashes {
		h.Write(p[:n])
	}
	// The checksums are checked at the end of the body, and already when
	// it reaches its declared size: a store that stops reading there must
	// not publish a body that fails them.
	if (err == io.EOF || (c.size >= 0 && c.n == c.size)) && c.mismatch == nil && !c.verified {
		c.verified = true
		for _, name := range checksumNames {
			h, ok := c.hashes[name]
			if !ok {
				continue
			}
			if got := h.Sum(nil); string(got) != string(c.want[name]) {
				c.mismatch = &ChecksumError{Bucket: c.b.name, Key: c.key, Algorithm: name,
					Want: hex.EncodeToString(c.want[name]), Got: hex.EncodeToString(got)}
				// The last bytes are withheld: a reader that drops an
				// error coming with a full buffer (io.ReadFull) still
				// sees the body fail.
				return 0, c.mismatch
			}
		}
	}
	return n, err
}

// Delete removes the objects; a missing key is not an error. Every key is
// validated before anything is deleted.
func (b *Bucket) Delete(ctx context.Context, keys ...string) error {
	return b.gated(ctx, func(ctx context.Context) error { return b.delete(ctx, keys) })
}

func (b *Bucket) delete(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if err := b.ValidateKey(k); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := b.s.Delete(ctx, b.Key(k)); err != nil {
			return err
		}
	}
	return nil
}

// Include values for ListOptions.
const (
	IncludeHTTPMetadata   = "httpMetadata"
	IncludeCustomMetadata = "customMetadata"
)

// ListOptions are List's options.
type ListOptions struct {
	Prefix    string
	Delimiter string
	// Cursor continues a listing (Objects.Cursor of the previous page).
	Cursor string
	// Limit is the most entries wanted (1..1000; 0: 1000).
	Limit int
	// Include asks for IncludeHTTPMetadata and/or IncludeCustomMetadata:
	// the store's listing carries no metadata, so each object listed is
	// read with one Head.
	Include []string
}

// Objects is one page of a listing.
type Objects struct {
	Objects           []*Object
	DelimitedPrefixes []string
	Truncated         bool
	Cursor            string
}

// List lists the bucket's objects in key order.
func (b *Bucket) List(ctx context.Context, opts ListOptions) (*Objects, error) {
	if opts.Limit < 0 || opts.Limit > 1000 {
		return nil, &MetadataError{Bucket: b.name, Reason: fmt.Sprintf("list limit %d is not between 1 and 1000", opts.Limit)}
	}
	limit := opts.Limit
	if limit == 0 {
		limit = 1000
	}
	pre := keyPrefix(b.name)
	page, err := b.s.List(ctx, store.ListOptions{Prefix: pre + encodePrefix(opts.Prefix), Delimiter: opts.Delimiter, Token: opts.Cursor, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &Objects{Cursor: page.NextToken, Truncated: page.NextToken != ""}
	var httpMD, customMD bool
	for _, inc := range opts.Include {
		switch inc {
		case IncludeHTTPMetadata:
			httpMD = true
		case IncludeCustomMetadata:
			customMD = true
		default:
			return nil, &MetadataError{Bucket: b.name, Reason: fmt.Sprintf("unknown include %q", inc)}
		}
	}
	for _, oi := range page.Objects {
		key := DecodeKey(strings.TrimPrefix(oi.Key, pre))
		o := &Object{Key: key, Version: string(oi.Version), ETag: etagOf(string(oi.Version)), Size: oi.Size, Uploaded: oi.Modified}
		o.HTTPETag = `"` + o.ETag + `"`
		if httpMD || customMD {
			// The stored key itself: one another tool wrote need not be
			// in EncodeKey's canonical form.
			r, full, err := b.openStored(ctx, oi.Key, key, 0, 0)
			if err == nil {
				r.Close()
			}
			if errors.Is(err, ErrNotFound) {
				continue // deleted since the listing
			}
			if err != nil {
				return nil, err
			}
			o.StorageClass, o.Checksums = full.StorageClass, full.Checksums
			if httpMD {
				o.HTTPMetadata = full.HTTPMetadata
			}
			if customMD {
				o.CustomMetadata = full.CustomMetadata
			}
		}
		out.Objects = append(out.Objects, o)
	}
	for _, p := range page.Prefixes {
		out.DelimitedPrefixes = append(out.DelimitedPrefixes, DecodeKey(strings.TrimPrefix(p, pre)))
	}
	return out, nil
}
