package gcs

import (
	"context"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"

	"github.com/cellb/cellb/core/store"
)

// Content headers on GCS are object attributes. Two things need care:
//
//   - A read returns only Content-Type, Content-Encoding and Cache-Control
//     with the body (storage.ReaderObjectAttrs), not Content-Language or
//     Content-Disposition. So a read first fetches the attributes, then
//     reads the body of exactly that generation: the headers and the body
//     always belong to one version. If the object is replaced in between,
//     the pinned read finds no such generation and the pair is read again.
//   - GCS decompresses an object stored with Content-Encoding gzip as it
//     serves it (decompressive transcoding), and the client asks for that
//     by default. Every read here is made with ReadCompressed(true), so the
//     body is the stored bytes and its length is the stored size.

// openAttempts bounds how often a read starts again because the object
// was replaced between its attributes and its body. Writers racing on one
// key (compare-and-swap loops of 20 clients) can replace it several times
// in a row; each retry is two small requests, and a reader only starves
// while writes keep landing between them.
const openAttempts = 100

// setHeaders puts h on the writer. An empty Content-Type is sent as none
// (ForceEmptyContentType): otherwise the client sniffs one from the body.
func setHeaders(w *storage.Writer, h store.ContentHeaders) {
	w.ContentType = h.ContentType
	w.ContentLanguage = h.ContentLanguage
	w.ContentDisposition = h.ContentDisposition
	w.ContentEncoding = h.ContentEncoding
	w.CacheControl = h.CacheControl
	w.ForceEmptyContentType = h.ContentType == ""
}

// headersOf returns an object's content headers.
func headersOf(a *storage.ObjectAttrs) store.ContentHeaders {
	return store.ContentHeaders{
		ContentType: a.ContentType, ContentLanguage: a.ContentLanguage,
		ContentDisposition: a.ContentDisposition, ContentEncoding: a.ContentEncoding,
		CacheControl: a.CacheControl,
	}
}

// open reads the attributes of key's current generation and opens length
// bytes of it from offset (length < 0: to the end), compressed as stored.
// It returns a nil reader when the range is empty. A range past the end
// gives store.ErrInvalidRange.
func (s *Store) open(ctx context.Context, key string, offset, length int64) (*storage.Reader, *storage.ObjectAttrs, int64, error) {
	obj := s.bucket.Object(key)
	for attempt := 1; ; attempt++ {
		attrs, err := obj.Attrs(ctx)
		if err != nil {
			return nil, nil, 0, readError("get", key, err)
		}
		if attrs.Generation <= 0 {
			return nil, nil, 0, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
		}
		n, err := store.CheckRange("get", key, offset, length, attrs.Size)
		if err != nil {
			return nil, nil, 0, err
		}
		if n == 0 {
			return nil, attrs, 0, nil
		}
		r, err := obj.Generation(attrs.Generation).ReadCompressed(true).NewRangeReader(ctx, offset, n)
		if err != nil {
			if isMissingObject(err) && attempt < openAttempts {
				continue // replaced since its attributes were read
			}
			if isMissingObject(err) || status(err) == http.StatusRequestedRangeNotSatisfiable || isRangeError(err) {
				err = fmt.Errorf("gcs: generation %d kept changing while it was read: %w", attrs.Generation, err)
			}
			return nil, nil, 0, &store.OpError{Op: "get", Key: key, Err: err}
		}
		if r.Remain() != n {
			r.Close()
			return nil, nil, 0, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("gcs: asked for %d bytes from %d of %d, the reader holds %d", n, offset, attrs.Size, r.Remain())}
		}
		return r, attrs, n, nil
	}
}
