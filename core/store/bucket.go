package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Bucket is the portable bucket: a Store, Streamer, Copier and DataGetter
// over a Driver, in the style of gocloud.dev/blob's Bucket. It holds every
// rule that does not depend on the backend, so that an adapter is only its
// SDK calls and its Classify:
//   - keys, prefixes, metadata and content headers are validated before
//     the driver is called (nothing is sent for a bad argument);
//   - a listing's limit is clamped to 1..1000, a range is checked and the
//     reader's Length is held to exactly the bytes the body gives;
//   - every error is an *OpError carrying a portable kind, decided from
//     the driver's Classify: a write is ambiguous unless the server said
//     otherwise, and never ambiguous when its body had not been read to
//     the end (the object cannot have been published);
//   - a read (get, list, delete) that failed transiently is tried once
//     more; writes are never retried here (see Retry for that).
//
// Adapters return a value that embeds *Bucket; middlewares (prefix,
// metrics, read progress, fault injection) wrap its Driver (see Wrap).
type Bucket struct {
	d Driver
}

// NewBucket returns the portable bucket over d.
func NewBucket(d Driver) *Bucket { return &Bucket{d: d} }

// Driver returns the driver b runs on.
func (b *Bucket) Driver() Driver { return b.d }

var (
	_ Store      = (*Bucket)(nil)
	_ Streamer   = (*Bucket)(nil)
	_ Copier     = (*Bucket)(nil)
	_ DataGetter = (*Bucket)(nil)
	_ Closer     = (*Bucket)(nil)
)

// maxListLimit is the largest listing page a Bucket asks a driver for.
const maxListLimit = 1000

// Get reads a whole object.
func (b *Bucket) Get(ctx context.Context, key string) (*Object, error) {
	return b.get(withWhole(ctx, true), "get", key, false)
}

// GetData reads key's body and version (see DataGetter).
func (b *Bucket) GetData(ctx context.Context, key string) (*Object, error) {
	return b.get(ctx, "get", key, true)
}

func (b *Bucket) get(ctx context.Context, op, key string, dataOnly bool) (*Object, error) {
	r, err := b.open(ctx, op, key, 0, -1, dataOnly)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var data []byte
	if r.Length <= maxExactGet {
		// The body gives exactly Length bytes (or fails): one allocation.
		data = make([]byte, r.Length)
		_, err = io.ReadFull(r.Body, data)
	} else {
		data, err = io.ReadAll(r.Body)
	}
	if err != nil {
		return nil, &OpError{Op: op, Key: key, Err: fmt.Errorf("reading the body: %w", err)}
	}
	return &Object{Key: key, Data: data, Version: r.Version, Metadata: r.Metadata, Headers: r.Headers, Modified: r.Modified}, nil
}

// maxExactGet is the largest body a Get allocates at once from the size the
// backend announced; a larger one grows as it arrives, so a wrong size
// cannot make one huge allocation.
const maxExactGet = 256 << 20

// NewRangeReader opens length bytes of key from offset (see the package
// function NewRangeReader for the rules).
func (b *Bucket) NewRangeReader(ctx context.Context, key string, offset, length int64) (*Reader, error) {
	return b.open(withWhole(ctx, false), "get", key, offset, length, false)
}

func (b *Bucket) open(ctx context.Context, op, key string, offset, length int64, dataOnly bool) (*Reader, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &OpError{Op: op, Key: key, Err: fmt.Errorf("%w (offset %d)", ErrInvalidRange, offset)}
	}
	var r *Reader
	err := b.read(ctx, func() error {
		var err error
		r, err = b.d.NewRangeReader(ctx, key, offset, length, dataOnly)
		return err
	})
	if err != nil {
		return nil, b.readError(op, key, err)
	}
	if r.Version == "" {
		r.Body.Close()
		return nil, &OpError{Op: op, Key: key, Err: ErrNoVersion}
	}
	n, err := CheckRange(op, key, offset, length, r.Size)
	if err != nil {
		r.Body.Close()
		return nil, err
	}
	r.Key, r.Offset, r.Length = key, offset, n
	r.Metadata = lowerNames(r.Metadata)
	r.Body = &exactBody{rc: r.Body, left: n}
	return r, nil
}

// ErrNoVersion: the backend answered without the object's version (an
// ETag, a generation). A read fails with it; a write that succeeded
// without one is reported as ambiguous, so that the caller re-reads.
var ErrNoVersion = errors.New("the response carried no version")

// ErrShortBody: an object's body ended before the length its reader
// announced (a connection cut mid-download).
var ErrShortBody = errors.New("the object's body ended early")

// exactBody gives exactly left bytes: a body that ends early fails with
// ErrShortBody instead of looking complete, and one that runs long is cut.
type exactBody struct {
	rc   io.ReadCloser
	left int64
}

func (e *exactBody) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.rc.Read(p)
	e.left -= int64(n)
	switch {
	case e.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, fmt.Errorf("%w (%d bytes missing)", ErrShortBody, e.left)
	}
	return n, err
}

func (e *exactBody) Close() error { return e.rc.Close() }

// Put writes a whole object.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (Version, error) {
	return b.putFrom(withWhole(ctx, true), key, bytes.NewReader(data), int64(len(data)), opts, data)
}

// PutFrom writes the object read from r (see Streamer).
func (b *Bucket) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error) {
	return b.putFrom(withWhole(ctx, false), key, r, size, opts, nil)
}

// wholeKey marks the context of a driver call made for a whole-object Get
// or Put of the Bucket (true) or for a streamed one (false). A driver
// never needs it; DriverOf does, to call a Store's own Get and Put for
// them rather than its streaming half, so that a Store whose Put and
// PutFrom differ (a test double overriding one of them, a conformance
// twin) behaves the same wrapped as bare.
type wholeKey struct{}

// withWhole marks ctx for a whole-object call (or not), leaving an
// unmarked context unmarked for a streamed one.
func withWhole(ctx context.Context, whole bool) context.Context {
	if !whole && ctx.Value(wholeKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, wholeKey{}, whole)
}

// isWhole reports whether ctx carries a whole-object call of a Bucket.
func isWhole(ctx context.Context) bool {
	w, _ := ctx.Value(wholeKey{}).(bool)
	return w
}

// putFrom writes r; data, when not nil, is the whole of r (a Put), which a
// driver may take at once with WholeBody.
func (b *Bucket) putFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions, data []byte) (Version, error) {
	if err := CheckPut(ctx, key, opts); err != nil {
		return "", err
	}
	body := &trackedBody{r: Body(ctx, r, size), size: size, done: size == 0, data: data}
	v, err := b.d.PutFrom(ctx, key, body, size, opts)
	if err != nil {
		if body.err != nil {
			return "", BodyError("put", key, body.err)
		}
		return "", b.writeError("put", key, opts.Condition, body.done, err)
	}
	if !body.done {
		// A driver that reports success without reading the body to its
		// end has published something other than the body.
		return "", Ambiguous("put", key, errors.New("the store reported success before reading the whole body"))
	}
	if v == "" {
		return "", Ambiguous("put", key, ErrNoVersion)
	}
	return v, nil
}

// trackedBody records how a streamed body ended: read to its end (done),
// or failed by the caller's reader, its declared size or its context
// (err). Either way the Bucket knows whether the object can have been
// published. A body of a declared size is complete once that many bytes
// were read: an SDK that sends exactly the content length it was given
// never asks for the io.EOF after it.
type trackedBody struct {
	r    io.Reader
	size int64 // -1: unknown
	n    int64
	done bool
	err  error
	data []byte // the whole body, for a Put
}

// eof is a body with nothing left.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }

// WholeBody gives a driver the whole body of a Bucket's Put as the
// caller's byte slice, and counts it as read to its end, so a driver that
// sends a body in one request needs no copy of it. ok is false for a
// streamed body (PutFrom) and once any of the body was read. The slice
// belongs to the caller: the driver must not keep or modify it.
func WholeBody(r io.Reader) (data []byte, ok bool) {
	t, isTracked := r.(*trackedBody)
	if !isTracked || t.data == nil || t.n != 0 || t.err != nil {
		return nil, false
	}
	t.n, t.done = int64(len(t.data)), true
	t.r = eof{}
	return t.data, true
}

func (t *trackedBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	switch {
	case err == io.EOF:
		t.done = t.err == nil
	case err != nil:
		t.done = false
		if t.err == nil {
			t.err = err
		}
	case t.size >= 0 && t.n == t.size:
		t.done = true
	}
	return n, err
}

// Delete removes key; deleting a missing key succeeds.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	err := b.read(ctx, func() error { return b.d.Delete(ctx, key) })
	if err != nil && !b.is(err, KindNotFound, ErrNotFound) {
		return b.readError("delete", key, err)
	}
	return nil
}

// List returns one page of keys.
func (b *Bucket) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	if err := ValidatePrefix(opts.Prefix); err != nil {
		return ListPage{}, err
	}
	if opts.Limit <= 0 || opts.Limit > maxListLimit {
		opts.Limit = maxListLimit
	}
	var page ListPage
	err := b.read(ctx, func() error {
		var err error
		page, err = b.d.List(ctx, opts)
		return err
	})
	if err != nil {
		return ListPage{}, b.readError("list", opts.Prefix, err)
	}
	return page, nil
}

// Copy copies src to dst inside the bucket (see Copier), or by streaming
// when the driver cannot.
func (b *Bucket) Copy(ctx context.Context, src, dst string) (Version, error) {
	if err := ValidateKey(src); err != nil {
		return "", err
	}
	if err := ValidateKey(dst); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", CopyError(src, dst, err)
	}
	v, err := b.d.Copy(ctx, src, dst)
	if errors.Is(err, ErrCopyUnsupported) {
		return CopyByStreaming(ctx, b, src, dst)
	}
	if err != nil {
		// A missing src is ErrNotFound, by writeError's portable kinds.
		var oe *OpError
		errors.As(b.writeError("copy", dst, IfAbsent, true, err), &oe)
		return "", CopyError(src, dst, oe.Err)
	}
	if v == "" {
		return "", CopyError(src, dst, fmt.Errorf("%w: %w", ErrAmbiguous, ErrNoVersion))
	}
	return v, nil
}

// Close releases the driver.
func (b *Bucket) Close() error { return b.d.Close() }

// read runs a read once, and once more when it failed transiently and
// ctx still allows.
func (b *Bucket) read(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := f()
	if err != nil && ctx.Err() == nil && b.kind(err) == KindTransient {
		err = f()
	}
	return err
}

// kind classifies err: errors that already carry a portable kind keep it.
func (b *Bucket) kind(err error) ErrorKind {
	switch {
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	case errors.Is(err, ErrPreconditionFailed):
		return KindPreconditionFailed
	case errors.Is(err, ErrInvalidRange):
		return KindInvalidRange
	case errors.Is(err, ErrInvalidKey):
		return KindInvalidKey
	case errors.Is(err, ErrAccessDenied):
		return KindAccessDenied
	case errors.Is(err, ErrBucketNotFound):
		return KindBucketNotFound
	case errors.Is(err, ErrAmbiguous):
		return KindUnknown
	}
	return b.d.Classify(err).Kind
}

func (b *Bucket) is(err error, k ErrorKind, portable error) bool {
	return errors.Is(err, portable) || b.kind(err) == k
}

// portable wraps err with the portable kind its class names, keeping err
// reachable. ok is false for the kinds that carry no portable error.
func (b *Bucket) portable(err error) (error, bool) {
	if alreadyPortable(err) {
		return err, true
	}
	c := b.d.Classify(err)
	switch c.Kind {
	case KindNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err), true
	case KindPreconditionFailed:
		return fmt.Errorf("%w: %w", ErrPreconditionFailed, err), true
	case KindInvalidRange:
		return fmt.Errorf("%w: %w", ErrInvalidRange, err), true
	case KindInvalidKey:
		return fmt.Errorf("%w: %w", ErrInvalidKey, err), true
	case KindAccessDenied:
		return &RefusedError{Kind: ErrAccessDenied, Status: c.Status, Code: c.Code, Hint: c.Hint, Err: err}, true
	case KindBucketNotFound:
		return &RefusedError{Kind: ErrBucketNotFound, Status: c.Status, Code: c.Code, Hint: c.Hint, Err: err}, true
	}
	return err, false
}

func alreadyPortable(err error) bool {
	for _, k := range []error{ErrNotFound, ErrPreconditionFailed, ErrInvalidRange, ErrInvalidKey, ErrAccessDenied, ErrBucketNotFound, ErrAmbiguous, ErrBodySize} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// ReadError is the error a Bucket over d reports when d's read (op "get",
// "list" or "delete") of key failed with err, for a middleware that
// reports what the caller will see (metrics). A nil err stays nil.
func ReadError(d Driver, op, key string, err error) error {
	if err == nil {
		return nil
	}
	return NewBucket(d).readError(op, key, err)
}

// WriteError is the error a Bucket over d reports when d's write (op "put"
// or "copy") of key under cond failed with err; sent says whether the body
// had been read to its end. A nil err stays nil.
func WriteError(d Driver, op, key string, cond Condition, sent bool, err error) error {
	if err == nil {
		return nil
	}
	return NewBucket(d).writeError(op, key, cond, sent, err)
}

// readError wraps the failure of a read (get, list, delete).
func (b *Bucket) readError(op, key string, err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	perr, _ := b.portable(err)
	return &OpError{Op: op, Key: key, Err: perr}
}

// writeError wraps the failure of a write under cond. sent reports that
// the whole request had left (the body read to its end): before that,
// nothing can have been applied.
func (b *Bucket) writeError(op, key string, cond Condition, sent bool, err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	if notApplied(err) {
		sent = false
	}
	k := b.kind(err)
	switch {
	case k == KindNotFound && cond.Kind == MatchVersion:
		// The version cannot match a missing object.
		return &OpError{Op: op, Key: key, Err: fmt.Errorf("%w: %w", ErrPreconditionFailed, err)}
	case k == KindPreconditionFailed && !cond.IsConditional():
		return &OpError{Op: op, Key: key, Err: err}
	}
	// A refusal stays a refusal however much of the body had left.
	if perr, ok := b.portable(err); ok {
		return &OpError{Op: op, Key: key, Err: perr}
	}
	if !sent || (k == KindRejected && !cond.IsConditional()) {
		return &OpError{Op: op, Key: key, Err: err}
	}
	return Ambiguous(op, key, err)
}

// lowerNames returns md with lower-case names (md itself when they are):
// metadata travels as HTTP headers, whose names are case-insensitive, and
// services disagree on the case they send back. An empty map is nil.
func lowerNames(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	lower := true
	for k := range md {
		if k != strings.ToLower(k) {
			lower = false
			break
		}
	}
	if lower {
		return md
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[strings.ToLower(k)] = v
	}
	return out
}
