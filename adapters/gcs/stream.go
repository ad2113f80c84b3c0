package gcs

import (
	"context"
	"errors"
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
	if err := store.ValidateMetadata(opts.Metadata); err != nil {
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

// NewRangeReader implements store.Streamer with the client's ranged
// reader. A read of no bytes, or one the service refuses with 416 (a range
// from the very end), reads the attributes instead.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("%w (offset %d)", store.ErrInvalidRange, offset)}
	}
	obj := s.bucket.Object(key)
	if length != 0 {
		r, err := obj.NewRangeReader(ctx, offset, length)
		if err == nil {
			if r.Attrs.Generation <= 0 {
				r.Close()
				return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
			}
			n, err := store.CheckRange("get", key, offset, length, r.Attrs.Size)
			if err == nil && r.Remain() != n {
				err = &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("gcs: asked for %d bytes from %d of %d, the reader holds %d", n, offset, r.Attrs.Size, r.Remain())}
			}
			if err != nil {
				r.Close()
				return nil, err
			}
			return &store.Reader{
				Key: key, Version: generationVersion(r.Attrs.Generation), Size: r.Attrs.Size,
				Metadata: lowerKeys(r.Metadata()), Modified: r.Attrs.LastModified,
				Offset: offset, Length: n, Body: r,
			}, nil
		}
		if status(err) != http.StatusRequestedRangeNotSatisfiable && !isRangeError(err) {
			return nil, readError("get", key, err)
		}
	}
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		return nil, readError("get", key, err)
	}
	if attrs.Generation <= 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
	}
	n, err := store.CheckRange("get", key, offset, length, attrs.Size)
	if err != nil {
		return nil, err
	}
	if n != 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: errors.New("gcs: the service refused a satisfiable range")}
	}
	return &store.Reader{
		Key: key, Version: generationVersion(attrs.Generation), Size: attrs.Size,
		Metadata: lowerKeys(attrs.Metadata), Modified: attrs.Updated,
		Offset: offset, Length: 0, Body: http.NoBody,
	}, nil
}

// isRangeError recognises a 416 that reached us without a googleapi.Error
// (the XML reader reports the status only in its message).
func isRangeError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "416") || strings.Contains(msg, "Requested Range Not Satisfiable")
}
