package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Streamer is the streaming half of the Store port, in the style of
// gocloud.dev/blob's driver: two calls, portable errors. Every adapter
// implements it natively (S3 multipart, GCS resumable uploads, Azure block
// blobs, files written to a temporary file and renamed); callers reach it
// through the package functions NewRangeReader, NewReader and PutFrom, which
// fall back to the whole-object Get and Put for a Store that does not stream
// (test fakes), so the port itself stays four methods.
//
// A streamed Put follows every rule of Put, and one more: the object is
// published only after the whole body has been read. A body that fails
// (its reader returns an error, it ends before the size the caller
// declared or runs past it) or a context that ends before the body is
// complete leaves the old object, or no object, exactly as it was, and the
// error is not ErrAmbiguous unless the body was complete when the failure
// came.
type Streamer interface {
	// NewRangeReader opens key for reading length bytes from offset
	// (length < 0: to the end). See NewRangeReader for the range rules.
	NewRangeReader(ctx context.Context, key string, offset, length int64) (*Reader, error)
	// PutFrom writes the object read from r and returns its new Version.
	// size is the body's exact length, or -1 when it is unknown.
	PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Version, error)
}

// Reader is an open object: its attributes and a stream of the requested
// range of its body. Close it when done; the attributes describe the
// version the stream reads, even if the object is replaced meanwhile.
type Reader struct {
	Key     string
	Version Version
	// Size is the size of the whole object, not of the range.
	Size     int64
	Metadata map[string]string
	Headers  ContentHeaders
	Modified time.Time
	// Offset and Length are the range the stream delivers, cut to the
	// object: Length is exactly the number of bytes Read will give.
	Offset, Length int64

	Body io.ReadCloser
}

// Read reads from the body.
func (r *Reader) Read(p []byte) (int, error) { return r.Body.Read(p) }

// Close releases the body.
func (r *Reader) Close() error { return r.Body.Close() }

// ErrInvalidRange: a ranged read starts past the end of the object, or its
// offset is negative.
var ErrInvalidRange = errors.New("invalid range: the read starts past the end of the object")

// ErrBodySize: a streamed Put's body held fewer or more bytes than the size
// the caller declared. Nothing was written.
var ErrBodySize = errors.New("the body's length differs from its declared size")

// CheckRange applies the range rules to an object of size bytes and returns
// the range a reader delivers. The rules: offset must be >= 0 and <= size
// (a read at exactly the end is empty); a length < 0, or one that runs past
// the end, is cut at the end (a short read, never an error).
func CheckRange(op, key string, offset, length, size int64) (int64, error) {
	if offset < 0 || offset > size {
		return 0, &OpError{Op: op, Key: key, Err: fmt.Errorf("%w (offset %d, object size %d)", ErrInvalidRange, offset, size)}
	}
	if length < 0 || length > size-offset {
		length = size - offset
	}
	return length, nil
}

// NewRangeReader opens length bytes of key from offset (length < 0: to the
// end). A missing key gives ErrNotFound; an offset past the end of the
// object (or negative) gives ErrInvalidRange; a length that runs past the
// end is cut at the end. The reader's Length says how many bytes it gives.
func NewRangeReader(ctx context.Context, s Store, key string, offset, length int64) (*Reader, error) {
	if st, ok := s.(Streamer); ok {
		return st.NewRangeReader(ctx, key, offset, length)
	}
	if offset < 0 {
		return nil, &OpError{Op: "get", Key: key, Err: fmt.Errorf("%w (offset %d)", ErrInvalidRange, offset)}
	}
	o, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return ReaderOf(o, offset, length)
}

// ReaderOf serves a range of a whole object as a Reader (for adapters and
// wrappers that hold the object in memory).
func ReaderOf(o *Object, offset, length int64) (*Reader, error) {
	n, err := CheckRange("get", o.Key, offset, length, int64(len(o.Data)))
	if err != nil {
		return nil, err
	}
	return &Reader{
		Key: o.Key, Version: o.Version, Size: int64(len(o.Data)), Metadata: o.Metadata, Headers: o.Headers, Modified: o.Modified,
		Offset: offset, Length: n,
		Body: io.NopCloser(bytes.NewReader(o.Data[offset : offset+n])),
	}, nil
}

// NewReader opens the whole of key.
func NewReader(ctx context.Context, s Store, key string) (*Reader, error) {
	return NewRangeReader(ctx, s, key, 0, -1)
}

// PutFrom writes the object read from r (size bytes, or -1 when unknown)
// with the rules of Streamer.PutFrom. On a Store that does not stream, the
// body is read whole and then written by Put.
func PutFrom(ctx context.Context, s Store, key string, r io.Reader, size int64, opts PutOptions) (Version, error) {
	if st, ok := s.(Streamer); ok {
		return st.PutFrom(ctx, key, r, size, opts)
	}
	data, err := ReadBody(ctx, "put", key, r, size)
	if err != nil {
		return "", err
	}
	return s.Put(ctx, key, data, opts)
}

// ReadBody reads a whole streamed body, checking it against its declared
// size (-1: unknown) and stopping when ctx ends. Errors are *OpError.
func ReadBody(ctx context.Context, op, key string, r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(min(size, 64<<20)))
	}
	if _, err := buf.ReadFrom(Body(ctx, r, size)); err != nil {
		return nil, BodyError(op, key, err)
	}
	return buf.Bytes(), nil
}

// BodyError wraps the failure of a streamed body as an *OpError of op on
// key, keeping the cause (the reader's error, ErrBodySize or the context's
// error) visible to errors.Is.
func BodyError(op, key string, err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	return &OpError{Op: op, Key: key, Err: fmt.Errorf("reading the body: %w", err)}
}

// Body wraps a streamed body so that it fails when ctx ends, and, when size
// is >= 0, when it ends before size bytes or holds more (ErrBodySize).
// Adapters read bodies through it so that a short or cancelled body is
// never mistaken for a complete one.
func Body(ctx context.Context, r io.Reader, size int64) io.Reader {
	return &body{ctx: ctx, r: r, size: size}
}

type body struct {
	ctx  context.Context
	r    io.Reader
	size int64 // -1: unknown
	n    int64
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.size >= 0 && b.n == b.size {
		// Check that nothing follows the declared size.
		var one [1]byte
		for range 100 {
			n, err := b.r.Read(one[:])
			if n > 0 {
				return 0, fmt.Errorf("%w: more than %d bytes", ErrBodySize, b.size)
			}
			if err == io.EOF {
				b.done = true
				return 0, io.EOF
			}
			if err != nil {
				return 0, err
			}
		}
		return 0, io.ErrNoProgress
	}
	if b.size >= 0 && int64(len(p)) > b.size-b.n {
		p = p[:b.size-b.n]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		if b.size >= 0 && b.n < b.size {
			return n, fmt.Errorf("%w: %d bytes, declared %d", ErrBodySize, b.n, b.size)
		}
		b.done = true
	}
	if err == nil && b.ctx.Err() != nil {
		err = b.ctx.Err()
	}
	return n, err
}

// ValidatePutOptions checks a put's metadata (ValidateMetadata) and
// content headers (ValidateHeaders).
func ValidatePutOptions(opts PutOptions) error {
	if err := ValidateMetadata(opts.Metadata); err != nil {
		return err
	}
	return ValidateHeaders(opts.Headers)
}

// CheckPut is what an adapter checks before a put sends anything: a valid
// key and metadata, a known condition kind, an if-match condition that
// names a version (an empty one can never hold), and a context that has
// not ended. Nothing was sent
// when it fails, so nothing can have been applied.
func CheckPut(ctx context.Context, key string, opts PutOptions) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidatePutOptions(opts); err != nil {
		return &OpError{Op: "put", Key: key, Err: err}
	}
	if c := opts.Condition; c.Kind > MatchVersion {
		return &OpError{Op: "put", Key: key, Err: fmt.Errorf("unknown condition kind %d", c.Kind)}
	}
	if c := opts.Condition; c.Kind == MatchVersion && c.Version == "" {
		return &OpError{Op: "put", Key: key, Err: fmt.Errorf("%w: if-match with an empty version", ErrPreconditionFailed)}
	}
	if err := ctx.Err(); err != nil {
		return &OpError{Op: "put", Key: key, Err: err}
	}
	return nil
}
