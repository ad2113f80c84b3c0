package gcs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cellb/cellb/core/store"
)

// Writes. A Version is the object's generation; create-only is
// ifGenerationMatch=0 and compare-and-swap ifGenerationMatch=<generation>,
// and a 412 answer is a clean rejection.
//
// A body that ends within oneShotMax bytes goes in one multipart upload
// (uploadType=multipart: the object resource, then the media), so the
// precondition is evaluated once, when the object is created. A longer or
// unknown-size body goes as a resumable upload: a session opened with the
// resource and the precondition, then chunks of chunkSize bytes as the
// body is read; the object is created, and the precondition decided, only
// by the last chunk. A body that fails before it is complete cancels the
// session, so no object appears.
//
// A conditional upload is sent once and never retried: if the first
// attempt was applied and its answer lost, a retry would meet the new
// generation, get a 412, and tell the caller it lost a race it won.
// Unconditional multipart uploads are tried up to unconditionalAttempts
// times on a transient failure: repeating them can only write the same
// bytes again.
//
// Every upload carries the body's CRC32C, which the service checks: in the
// object resource of a multipart upload, in X-Goog-Hash on the last chunk
// of a resumable one. The CRC32C the service answers with is checked too.

const (
	// oneShotMax is the longest body sent in one request.
	oneShotMax = 16 << 20
	// chunkSize is a resumable upload's chunk (a multiple of 256 KiB);
	// the first chunk is the oneShotMax bytes read to choose the upload.
	chunkSize = oneShotMax
	// unconditionalAttempts bounds the tries of an unconditional upload.
	unconditionalAttempts = 3
)

// PutFrom implements store.Driver.
func (d *driver) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	gen, err := precondition(opts.Condition)
	if err != nil {
		return "", err
	}
	head, whole, err := store.ReadHead(key, r, size, oneShotMax)
	if err != nil {
		return "", err
	}
	meta := resource{Name: key, Metadata: opts.Metadata}
	meta.setHeaders(opts.Headers)
	if whole {
		return d.putMultipart(ctx, head, meta, gen, opts.Condition.IsConditional())
	}
	// head is the first chunk: oneShotMax bytes, as many as chunkSize.
	return d.putResumable(ctx, key, head, r, meta, gen)
}

// putMultipart uploads data in one request.
func (d *driver) putMultipart(ctx context.Context, data []byte, meta resource, gen string, conditional bool) (store.Version, error) {
	sum := crc32.Checksum(data, castagnoli)
	meta.CRC32C = crc32cString(sum)
	head, tail, ctype, err := multipartFrame(meta)
	if err != nil {
		return "", err
	}
	q := url.Values{"uploadType": {"multipart"}}
	if gen != "" {
		q.Set("ifGenerationMatch", gen)
	}
	u := d.objectsURL(d.upload) + "?" + q.Encode()
	attempts := unconditionalAttempts
	if conditional {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		body := func() (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(bytes.NewReader(head), bytes.NewReader(data), bytes.NewReader(tail))), nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
		if err != nil {
			return "", err
		}
		req.Body, _ = body()
		req.GetBody = body
		req.ContentLength = int64(len(head) + len(data) + len(tail))
		req.Header.Set("Content-Type", ctype)
		v, err := d.created(opPut, req, sum)
		if err == nil || attempt >= attempts || classify(err).Kind != store.KindTransient {
			return v, err
		}
		if serr := d.sleep(ctx, time.Duration(attempt)*100*time.Millisecond); serr != nil {
			return "", errors.Join(err, serr)
		}
	}
}

// multipartFrame returns what goes before and after the media of a
// multipart upload of meta, and the request's Content-Type. An empty
// content type is sent as none: the service then stores its default.
func multipartFrame(meta resource) (head, tail []byte, ctype string, err error) {
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, "", err
	}
	var b [16]byte
	rand.Read(b[:])
	boundary := "cellb-" + hex.EncodeToString(b[:])
	var h bytes.Buffer
	fmt.Fprintf(&h, "--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n--%s\r\n", boundary, js, boundary)
	if meta.ContentType != "" {
		fmt.Fprintf(&h, "Content-Type: %s\r\n", meta.ContentType)
	}
	h.WriteString("\r\n")
	return h.Bytes(), []byte("\r\n--" + boundary + "--\r\n"), "multipart/related; boundary=" + boundary, nil
}

// created sends an upload that creates the object and returns its
// generation, checking the CRC32C the service stored against sum.
func (d *driver) created(op string, req *http.Request, sum uint32) (store.Version, error) {
	res, err := d.send(op, req, http.StatusOK, http.StatusCreated)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var obj resource
	if err := json.NewDecoder(res.Body).Decode(&obj); err != nil {
		return "", fmt.Errorf("gcs: decoding the created object: %w", err)
	}
	v, err := obj.version()
	if err != nil {
		return "", err
	}
	if obj.CRC32C != "" && obj.CRC32C != crc32cString(sum) {
		return "", fmt.Errorf("%w (generation %s: %s, sent %s)", ErrChecksum, v, obj.CRC32C, crc32cString(sum))
	}
	return v, nil
}

// putResumable uploads body through a resumable session: chunk by chunk,
// each chunk known to be the last only when a read past it finds the end.
func (d *driver) putResumable(ctx context.Context, key string, first []byte, body io.Reader, meta resource, gen string) (store.Version, error) {
	session, err := d.openSession(ctx, meta, gen)
	if err != nil {
		// Nothing is created before the last chunk.
		return "", store.NotApplied("opening the upload session", err)
	}
	fail := func(err error) (store.Version, error) {
		d.cancelSession(session)
		return "", err
	}
	buf := first[:chunkSize:chunkSize] // reused for every later chunk
	crc := crc32.New(castagnoli)
	var sent int64
	n, rerr := chunkSize, error(nil)
	for {
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			crc.Write(buf[:n])
			return d.finishSession(ctx, session, buf[:n], sent, crc.Sum32())
		case rerr != nil:
			return fail(store.BodyError("put", key, rerr))
		}
		var one [1]byte
		if _, perr := io.ReadFull(body, one[:]); perr == io.EOF {
			crc.Write(buf[:n])
			return d.finishSession(ctx, session, buf[:n], sent, crc.Sum32())
		} else if perr != nil {
			return fail(store.BodyError("put", key, perr))
		}
		if err := d.sendChunk(ctx, session, buf[:n], sent); err != nil {
			return fail(store.NotApplied("uploading a chunk", err))
		}
		crc.Write(buf[:n])
		sent += int64(n)
		buf[0] = one[0]
		n, rerr = io.ReadFull(body, buf[1:])
		n++
		if rerr == io.EOF {
			rerr = io.ErrUnexpectedEOF // the chunk holds the byte read ahead
		}
	}
}

// openSession starts a resumable upload of meta under the precondition
// gen and returns the session's URL.
func (d *driver) openSession(ctx context.Context, meta resource, gen string) (string, error) {
	js, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	q := url.Values{"uploadType": {"resumable"}}
	if gen != "" {
		q.Set("ifGenerationMatch", gen)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.objectsURL(d.upload)+"?"+q.Encode(), bytes.NewReader(js))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json; charset=UTF-8")
	if meta.ContentType != "" {
		req.Header.Set("X-Upload-Content-Type", meta.ContentType)
	}
	res, err := d.send(opPut, req, http.StatusOK, http.StatusCreated)
	if err != nil {
		return "", err
	}
	drain(res)
	loc := res.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("gcs: the resumable upload's answer has no session Location")
	}
	return loc, nil
}

// sendChunk sends a chunk that is not the last; the service answers 308.
func (d *driver) sendChunk(ctx context.Context, session string, chunk []byte, offset int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, session, bytes.NewReader(chunk))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", offset, offset+int64(len(chunk))-1))
	res, err := d.send(opChunk, req, http.StatusPermanentRedirect)
	if err != nil {
		return err
	}
	drain(res)
	// The answer's Range says how much of the upload the service kept; a
	// service may keep less than it was sent, and the adapter does not
	// send bytes twice, so the upload is abandoned then.
	want := offset + int64(len(chunk))
	var last int64 = -1
	if rng := res.Header.Get("Range"); rng != "" {
		if _, err := fmt.Sscanf(rng, "bytes=0-%d", &last); err != nil {
			return fmt.Errorf("gcs: a resumable upload's answer has Range %q", rng)
		}
	}
	if last+1 != want {
		return fmt.Errorf("gcs: the service kept %d of the %d bytes sent in a resumable upload", last+1, want)
	}
	return nil
}

// finishSession sends the last chunk, which creates the object, with the
// whole body's CRC32C.
func (d *driver) finishSession(ctx context.Context, session string, chunk []byte, offset int64, sum uint32) (store.Version, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, session, bytes.NewReader(chunk))
	if err != nil {
		return "", err
	}
	total := offset + int64(len(chunk))
	if len(chunk) == 0 {
		req.Header.Set("Content-Range", fmt.Sprintf("bytes */%d", total))
	} else {
		req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", offset, total-1, total))
	}
	req.Header.Set("X-Goog-Hash", "crc32c="+crc32cString(sum))
	return d.created(opChunk, req, sum)
}

// cancelSession abandons a resumable upload (best effort: a session left
// open expires after a week and never creates an object).
func (d *driver) cancelSession(session string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, session, nil)
	if err != nil {
		return
	}
	if res, err := d.hc.Do(req); err == nil {
		drain(res)
	}
}
