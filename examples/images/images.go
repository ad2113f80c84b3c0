// Package images is CellB's R2 example: objects owned by no cell, kept in
// the fleet's bucket in celld's R2 format (core/r2) and reached through
// the host's R2 binding, served over HTTP.
//
//	PUT    /images/<key>   store the body; the request's Content-Type,
//	                       Content-Language, Content-Disposition,
//	                       Content-Encoding and Cache-Control are kept as
//	                       the object's HTTP metadata, X-Meta-<name>
//	                       headers as custom metadata; If-Match /
//	                       If-None-Match make it conditional (412 when
//	                       they fail). 200 {"key","etag","size","version"}
//	GET    /images/<key>   the body, with its HTTP metadata, ETag and
//	                       Last-Modified; a Range of bytes=a-b or bytes=-n
//	                       answers 206; If-None-Match on its ETag, 304
//	HEAD   /images/<key>   as GET, without the body
//	DELETE /images/<key>   204, also for a missing key
//	GET    /images?prefix=&cursor=&limit=   200 {"objects":[{"key","size","etag","uploaded"}],"cursor"}
//
// Errors: 404 for a missing object, 400 for an invalid key or metadata,
// 412 for a failed condition, 416 for a range past the end, 500 else, each
// with the error's message. celld's Workers reading the same bucket
// (bucket_name "images" by default) see the same objects.
package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

// Binding is the R2 binding name the app asks its host for, and
// BucketName the bucket_name cellb serve binds it to.
const (
	Binding    = "IMAGES"
	BucketName = "images"
)

// App serves the routes over one bucket.
type App struct{ b *r2.Bucket }

// New returns the app over b (the bucket bound to Binding).
func New(b *r2.Bucket) *App { return &App{b: b} }

// Routes adds the routes to mux.
func (a *App) Routes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /images/{key...}", a.put)
	mux.HandleFunc("GET /images/{key...}", a.get) // and HEAD
	mux.HandleFunc("DELETE /images/{key...}", a.delete)
	mux.HandleFunc("GET /images", a.list)
}

// status maps r2's typed errors to HTTP.
func status(err error) int {
	var ke *r2.KeyError
	switch {
	case errors.Is(err, r2.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, r2.ErrPreconditionFailed):
		return http.StatusPreconditionFailed
	case errors.As(err, &ke), errors.Is(err, r2.ErrInvalidMetadata), errors.Is(err, r2.ErrChecksumMismatch):
		return http.StatusBadRequest
	case errors.Is(err, store.ErrInvalidRange):
		return http.StatusRequestedRangeNotSatisfiable
	}
	return http.StatusInternalServerError
}

func fail(w http.ResponseWriter, err error) { http.Error(w, err.Error(), status(err)) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (a *App) put(w http.ResponseWriter, r *http.Request) {
	h := r.Header
	opts := r2.PutOptions{
		HTTPMetadata: r2.HTTPMetadata{
			ContentType: h.Get("Content-Type"), ContentLanguage: h.Get("Content-Language"),
			ContentDisposition: h.Get("Content-Disposition"), ContentEncoding: h.Get("Content-Encoding"),
			CacheControl: h.Get("Cache-Control"),
		},
		Size: r.ContentLength,
	}
	for name, vs := range h {
		if m, ok := strings.CutPrefix(strings.ToLower(name), "x-meta-"); ok && m != "" {
			if opts.CustomMetadata == nil {
				opts.CustomMetadata = map[string]string{}
			}
			opts.CustomMetadata[m] = vs[0]
		}
	}
	if im, inm := h.Get("If-Match"), h.Get("If-None-Match"); im != "" || inm != "" {
		opts.OnlyIf = &r2.Conditional{EtagMatches: im, EtagDoesNotMatch: inm}
	}
	o, err := a.b.Put(r.Context(), r.PathValue("key"), r.Body, opts)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"key": o.Key, "etag": o.ETag, "size": o.Size, "version": o.Version})
}

// parseRange reads a single-range Range header (bytes=a-b, bytes=a-,
// bytes=-n); nil for none or one it does not understand (the whole body
// is then sent, as HTTP allows).
func parseRange(v string) *r2.Range {
	spec, ok := strings.CutPrefix(v, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil
	}
	lo, hi, ok := strings.Cut(spec, "-")
	if !ok {
		return nil
	}
	if lo == "" {
		n, err := strconv.ParseInt(hi, 10, 64)
		if err != nil || n <= 0 {
			return nil
		}
		return &r2.Range{Suffix: n}
	}
	off, err := strconv.ParseInt(lo, 10, 64)
	if err != nil || off < 0 {
		return nil
	}
	if hi == "" {
		return &r2.Range{Offset: off}
	}
	end, err := strconv.ParseInt(hi, 10, 64)
	if err != nil || end < off {
		return nil
	}
	return &r2.Range{Offset: off, Length: end - off + 1}
}

func (a *App) get(w http.ResponseWriter, r *http.Request) {
	opts := r2.GetOptions{Range: parseRange(r.Header.Get("Range"))}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		opts.OnlyIf = &r2.Conditional{EtagDoesNotMatch: inm}
	}
	ob, err := a.b.Get(r.Context(), r.PathValue("key"), opts)
	var pf *r2.PreconditionFailedError
	if errors.As(err, &pf) && pf.Object != nil {
		w.Header().Set("ETag", pf.Object.HTTPETag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	defer ob.Close()
	h := w.Header()
	ob.WriteHTTPMetadata(h)
	if h.Get("Content-Type") == "" {
		h["Content-Type"] = nil // no type recorded: do not let net/http sniff one
	}
	h.Set("ETag", ob.HTTPETag)
	h.Set("Last-Modified", ob.Uploaded.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	n := ob.Size
	code := http.StatusOK
	if ob.Range != nil {
		n = ob.Range.Length
		code = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", ob.Range.Offset, ob.Range.Offset+n-1, ob.Size))
	}
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		io.Copy(w, ob)
	}
}

func (a *App) delete(w http.ResponseWriter, r *http.Request) {
	if err := a.b.Delete(r.Context(), r.PathValue("key")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type listed struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	ETag     string    `json:"etag"`
	Uploaded time.Time `json:"uploaded"`
}

func (a *App) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	page, err := a.b.List(r.Context(), r2.ListOptions{Prefix: q.Get("prefix"), Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		fail(w, err)
		return
	}
	out := struct {
		Objects []listed `json:"objects"`
		Cursor  string   `json:"cursor,omitempty"`
	}{Objects: []listed{}, Cursor: page.Cursor}
	for _, o := range page.Objects {
		out.Objects = append(out.Objects, listed{Key: o.Key, Size: o.Size, ETag: o.ETag, Uploaded: o.Uploaded})
	}
	writeJSON(w, out)
}
