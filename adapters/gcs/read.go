package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cellb/cellb/core/store"
)

// Reads. A media download (alt=media) carries the body and its
// generation (X-Goog-Generation) but not all of the object's attributes:
// no Content-Language, no Content-Disposition, and on the service no user
// metadata. So a full read first fetches the attributes, then downloads
// exactly that generation (generation=N): the headers and the body always
// belong to one version. If the object is replaced in between, the pinned
// download finds no such generation and the pair is read again. A dataOnly
// read is the download alone, one request.
//
// GCS decompresses an object stored with Content-Encoding gzip as it
// serves it (decompressive transcoding) unless the request accepts gzip.
// Every download here sends Accept-Encoding: gzip, so the body is the
// stored bytes and its length the stored size (net/http leaves a body
// alone when the caller set Accept-Encoding).

// openAttempts bounds how often a read starts again because the object
// was replaced between its attributes and its body. Writers racing on one
// key (compare-and-swap loops of 20 clients) can replace it several times
// in a row; each retry is two small requests, and a reader only starves
// while writes keep landing between them.
const openAttempts = 100

// NewRangeReader implements store.Driver.
func (d *driver) NewRangeReader(ctx context.Context, key string, offset, length int64, dataOnly bool) (*store.Reader, error) {
	if dataOnly && length != 0 {
		return d.download(ctx, key, offset, length)
	}
	for attempt := 1; ; attempt++ {
		attrs, err := d.attrs(ctx, key)
		if err != nil {
			return nil, err
		}
		r, err := d.readerOf(attrs, key, offset, length)
		if err != nil || r.Length == 0 {
			return r, err
		}
		res, err := d.get(ctx, key, r.Version, offset, r.Length)
		if err != nil {
			var ae *APIError
			if errors.As(err, &ae) && ae.Status == http.StatusNotFound && !ae.missingBucket() {
				if attempt < openAttempts {
					continue // replaced since its attributes were read
				}
				return nil, fmt.Errorf("gcs: generation %s kept changing while it was read: %w", r.Version, err)
			}
			return nil, err
		}
		if res.ContentLength != r.Length {
			drain(res)
			return nil, fmt.Errorf("gcs: asked for %d bytes from %d of %d, the answer holds %d", r.Length, offset, r.Size, res.ContentLength)
		}
		r.Body = res.Body
		return r, nil
	}
}

// attrs reads key's object resource.
func (d *driver) attrs(ctx context.Context, key string) (*resource, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.objectURL(key), nil)
	if err != nil {
		return nil, err
	}
	res, err := d.send(opGet, req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var attrs resource
	if err := json.NewDecoder(res.Body).Decode(&attrs); err != nil {
		return nil, fmt.Errorf("gcs: decoding the object resource: %w", err)
	}
	return &attrs, nil
}

// readerOf returns the Reader of attrs' range, its Body empty.
func (d *driver) readerOf(attrs *resource, key string, offset, length int64) (*store.Reader, error) {
	v, err := attrs.version()
	if err != nil {
		return nil, err
	}
	size, err := attrs.size()
	if err != nil {
		return nil, err
	}
	n, err := store.CheckRange("get", key, offset, length, size)
	if err != nil {
		return nil, err
	}
	return &store.Reader{
		Key: key, Version: v, Size: size, Modified: attrs.modified(),
		Metadata: attrs.Metadata, Headers: attrs.headers(),
		Offset: offset, Length: n, Body: http.NoBody,
	}, nil
}

// get downloads n > 0 bytes of key from offset, of generation v when v is
// not empty.
func (d *driver) get(ctx context.Context, key string, v store.Version, offset, n int64) (*http.Response, error) {
	u := d.objectURL(key) + "?alt=media"
	if v != "" {
		u += "&generation=" + string(v)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	switch {
	case n > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+n-1))
	case offset > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	return d.send(opGet, req, http.StatusOK, http.StatusPartialContent)
}

// download is the dataOnly read: one request, the generation from the
// answer's X-Goog-Generation. An offset at or past the end answers 416;
// the object's attributes then tell an empty read at the very end from an
// invalid range.
func (d *driver) download(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	res, err := d.get(ctx, key, "", offset, max(length, 0))
	if err != nil {
		var ae *APIError
		if offset > 0 && errors.As(err, &ae) && ae.Status == http.StatusRequestedRangeNotSatisfiable {
			attrs, aerr := d.attrs(ctx, key)
			if aerr != nil {
				return nil, aerr
			}
			r, rerr := d.readerOf(attrs, key, offset, 0)
			if rerr != nil {
				return nil, rerr
			}
			r.Metadata, r.Headers = nil, store.ContentHeaders{}
			return r, nil
		}
		return nil, err
	}
	r, err := readerOfDownload(res, key, offset, length)
	if err != nil {
		drain(res)
		return nil, err
	}
	return r, nil
}

// readerOfDownload reads a download's answer: the generation, the whole
// object's size and the range it holds.
func readerOfDownload(res *http.Response, key string, offset, length int64) (*store.Reader, error) {
	g, err := strconv.ParseInt(res.Header.Get("X-Goog-Generation"), 10, 64)
	if err != nil || g <= 0 {
		return nil, ErrNoVersion
	}
	var size, start, n int64
	if res.StatusCode == http.StatusPartialContent {
		if start, n, size, err = contentRange(res.Header.Get("Content-Range")); err != nil {
			return nil, err
		}
	} else {
		size = res.ContentLength
		if s := res.Header.Get("X-Goog-Stored-Content-Length"); s != "" {
			size, err = strconv.ParseInt(s, 10, 64)
		}
		if err != nil || size < 0 || res.ContentLength != size {
			return nil, fmt.Errorf("gcs: download of %s: length %d, stored length %q", key, res.ContentLength, res.Header.Get("X-Goog-Stored-Content-Length"))
		}
		n = size
	}
	if start != offset || offset+n > size {
		return nil, fmt.Errorf("gcs: asked for bytes from %d, the answer holds %d from %d of %d", offset, n, start, size)
	}
	if length >= 0 && n > length {
		// A server that ignored the range: deliver what was asked.
		n = length
	}
	modified, _ := time.Parse(http.TimeFormat, res.Header.Get("Last-Modified"))
	body := res.Body
	if n < res.ContentLength {
		body = limitedBody{io.LimitReader(res.Body, n), res.Body}
	}
	return &store.Reader{
		Key: key, Version: store.Version(strconv.FormatInt(g, 10)), Size: size, Modified: modified,
		Offset: offset, Length: n, Body: body,
	}, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// contentRange parses "bytes FIRST-LAST/SIZE".
func contentRange(h string) (start, n, size int64, err error) {
	spec, ok := strings.CutPrefix(h, "bytes ")
	rng, total, ok2 := strings.Cut(spec, "/")
	first, last, ok3 := strings.Cut(rng, "-")
	if ok && ok2 && ok3 {
		start, err = strconv.ParseInt(first, 10, 64)
		if err == nil {
			var end int64
			if end, err = strconv.ParseInt(last, 10, 64); err == nil {
				if size, err = strconv.ParseInt(total, 10, 64); err == nil && end >= start {
					return start, end - start + 1, size, nil
				}
			}
		}
	}
	return 0, 0, 0, fmt.Errorf("gcs: invalid Content-Range %q", h)
}
