package gcs

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cellb/cellb/core/store"
)

// driver is the store.Driver on one bucket, speaking the JSON API with
// net/http.
type driver struct {
	hc *http.Client
	// api is the JSON API's base ("…/storage/v1/"), upload the media
	// upload base beside it ("…/upload/storage/v1/").
	api, upload string
	bucket      string
	// streamCopies: Copy answers ErrCopyUnsupported (Options.StreamCopies).
	streamCopies bool
	// transport is closed with the driver when New created it.
	transport *http.Transport
	// sleep waits between the tries of an unconditional upload.
	sleep func(context.Context, time.Duration) error
}

var _ store.Driver = (*driver)(nil)

// newDriver returns a driver sending requests through hc to the JSON API
// at endpoint.
func newDriver(hc *http.Client, endpoint, bucket string) *driver {
	root := strings.TrimSuffix(endpoint, "/")
	root = strings.TrimSuffix(root, "/storage/v1")
	return &driver{
		hc: hc, api: root + "/storage/v1/", upload: root + "/upload/storage/v1/",
		bucket: bucket, sleep: sleepCtx,
	}
}

// Close releases the idle connections of a transport New created.
func (d *driver) Close() error {
	if d.transport != nil {
		d.transport.CloseIdleConnections()
	}
	return nil
}

func sleepCtx(ctx context.Context, dt time.Duration) error {
	t := time.NewTimer(dt)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// escape percent-encodes a path segment: every byte but the unreserved
// ones, so an object name's "/" (and "+", ";", "?") reach the service as
// part of the name.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// objectURL is the JSON API resource of key.
func (d *driver) objectURL(key string) string {
	return d.api + "b/" + escape(d.bucket) + "/o/" + escape(key)
}

// objectsURL is the bucket's object collection under base (api or upload).
func (d *driver) objectsURL(base string) string {
	return base + "b/" + escape(d.bucket) + "/o"
}

// send sends req and returns the answer when its status is one of ok;
// otherwise the answer's *APIError (op names the request for Classify).
func (d *driver) send(op string, req *http.Request, ok ...int) (*http.Response, error) {
	res, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	for _, s := range ok {
		if res.StatusCode == s {
			return res, nil
		}
	}
	return nil, apiError(op, res)
}

// resource is the part of the JSON API's object resource the adapter
// reads and writes.
type resource struct {
	Name               string            `json:"name,omitempty"`
	Generation         string            `json:"generation,omitempty"`
	Size               string            `json:"size,omitempty"`
	Updated            string            `json:"updated,omitempty"`
	ContentType        string            `json:"contentType,omitempty"`
	ContentLanguage    string            `json:"contentLanguage,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	CRC32C             string            `json:"crc32c,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
}

// version returns the resource's generation as a Version; ErrNoVersion
// when it has none.
func (r *resource) version() (store.Version, error) {
	g, err := strconv.ParseInt(r.Generation, 10, 64)
	if err != nil || g <= 0 {
		return "", ErrNoVersion
	}
	return store.Version(r.Generation), nil
}

func (r *resource) size() (int64, error) {
	n, err := strconv.ParseInt(r.Size, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("gcs: object %q has no valid size (%q)", r.Name, r.Size)
	}
	return n, nil
}

func (r *resource) modified() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, r.Updated)
	return t
}

func (r *resource) headers() store.ContentHeaders {
	return store.ContentHeaders{
		ContentType: r.ContentType, ContentLanguage: r.ContentLanguage,
		ContentDisposition: r.ContentDisposition, ContentEncoding: r.ContentEncoding,
		CacheControl: r.CacheControl,
	}
}

func (r *resource) setHeaders(h store.ContentHeaders) {
	r.ContentType = h.ContentType
	r.ContentLanguage = h.ContentLanguage
	r.ContentDisposition = h.ContentDisposition
	r.ContentEncoding = h.ContentEncoding
	r.CacheControl = h.CacheControl
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cString is the JSON API's spelling of a CRC32C: the four bytes,
// big-endian, in base64.
func crc32cString(sum uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], sum)
	return base64.StdEncoding.EncodeToString(b[:])
}

// errBadGeneration is returned for a version no GCS object can have.
var errBadGeneration = errors.New("gcs: version is not an object generation (a positive decimal number)")

// precondition returns the ifGenerationMatch value of cond: "" for an
// unconditional write, "0" for create-only, the generation otherwise.
func precondition(cond store.Condition) (string, error) {
	switch cond.Kind {
	case store.CreateOnly:
		return "0", nil
	case store.MatchVersion:
		g, err := strconv.ParseInt(string(cond.Version), 10, 64)
		if err != nil || g <= 0 {
			// No object can have this version, so the condition is false.
			return "", fmt.Errorf("%w: %w: %q", store.ErrPreconditionFailed, errBadGeneration, string(cond.Version))
		}
		return strconv.FormatInt(g, 10), nil
	}
	return "", nil
}

// drain reads what is left of an answer's body so its connection can be
// reused, and closes it.
func drain(res *http.Response) {
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
}
