package gcs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cellb/cellb/core/store"
)

var _ store.Streamer = (*Store)(nil)

// PutFrom implements store.Streamer with the storage client's Writer: a
// resumable upload sent ChunkSize (16 MiB) at a time as the body is read,
// the object created (and its precondition checked) only when the last
// chunk is sent. The client computes the body's CRC32C as it goes and the
// service checks it. A body that fails, or a context that ends, cancels
// the writer's context before the last chunk: the upload is abandoned and
// no object appears.
func (s *Store) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	if err := store.ValidatePutOptions(opts); err != nil {
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	cond := opts.Condition
	obj, err := s.conditioned(key, cond)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.NewWriter(wctx)
	w.Metadata = opts.Metadata
	setHeaders(w, opts.Headers)
	body := store.Body(ctx, r, size)
	buf := make([]byte, 256<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				// The last chunk goes only at Close: an upload that fails
				// before it cannot have created the object.
				cancel()
				w.Close()
				if cerr := ctx.Err(); cerr != nil {
					err = cerr
				}
				return "", &store.OpError{Op: "put", Key: key, Err: fmt.Errorf("uploading: %w", err)}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			cancel() // abandons the upload before its last chunk
			w.Close()
			return "", store.BodyError("put", key, rerr)
		}
	}
	if err := w.Close(); err != nil {
		return "", writeError(key, cond, err)
	}
	attrs := w.Attrs()
	if attrs == nil || attrs.Generation <= 0 {
		return "", store.Ambiguous("put", key, ErrNoVersion)
	}
	return generationVersion(attrs.Generation), nil
}

// NewRangeReader implements store.Streamer: the object's attributes, then
// the range of exactly that generation, read as stored (see open).
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("%w (offset %d)", store.ErrInvalidRange, offset)}
	}
	r, attrs, n, err := s.open(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	var body io.ReadCloser = http.NoBody
	if r != nil {
		body = r
	}
	return &store.Reader{
		Key: key, Version: generationVersion(attrs.Generation), Size: attrs.Size,
		Metadata: lowerKeys(attrs.Metadata), Headers: headersOf(attrs), Modified: attrs.Updated,
		Offset: offset, Length: n, Body: body,
	}, nil
}

// isRangeError recognises a 416 that reached us without a googleapi.Error
// (the XML reader reports the status only in its message).
func isRangeError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "416") || strings.Contains(msg, "Requested Range Not Satisfiable")
}
