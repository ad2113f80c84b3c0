package gcs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/cellb/cellb/core/store"
)

func TestClassify(t *testing.T) {
	api := func(op string, status int, msg string) error {
		return fmt.Errorf("wrapped: %w", &APIError{Op: op, Status: status, Reason: "r", Message: msg})
	}
	for _, c := range []struct {
		name string
		err  error
		want store.ErrorKind
		hint string
	}{
		{"412", api(opPut, 412, ""), store.KindPreconditionFailed, ""},
		{"412 on the last chunk", api(opChunk, 412, ""), store.KindPreconditionFailed, ""},
		{"401", api(opGet, 401, ""), store.KindAccessDenied, "GOOGLE_APPLICATION_CREDENTIALS"},
		{"403", api(opPut, 403, ""), store.KindAccessDenied, "GOOGLE_APPLICATION_CREDENTIALS"},
		{"404 object on a read", api(opGet, 404, "No such object: b/k"), store.KindNotFound, ""},
		{"404 bucket on a read", api(opGet, 404, "The specified bucket does not exist."), store.KindBucketNotFound, "bucket's name"},
		{"404 bucket on a delete", api(opDelete, 404, "The specified bucket does not exist."), store.KindBucketNotFound, "bucket's name"},
		{"404 on an upload", api(opPut, 404, ""), store.KindBucketNotFound, "bucket's name"},
		{"404 on a listing", api(opList, 404, "Not Found"), store.KindBucketNotFound, "bucket's name"},
		{"404 source of a copy", api(opCopy, 404, "No such object: b/src"), store.KindNotFound, ""},
		{"404 object whose name says bucket", api(opGet, 404, "No such object: b/the bucket does not exist"), store.KindNotFound, ""},
		{"404 upload session", api(opChunk, 404, ""), store.KindRejected, ""},
		{"416", api(opGet, 416, ""), store.KindInvalidRange, ""},
		{"429", api(opPut, 429, ""), store.KindTransient, ""},
		{"500", api(opGet, 500, ""), store.KindTransient, ""},
		{"503", api(opPut, 503, ""), store.KindTransient, ""},
		{"400", api(opPut, 400, ""), store.KindRejected, ""},
		{"409", api(opPut, 409, ""), store.KindRejected, ""},
		{"token refused", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400}, ErrorCode: "invalid_grant"}, store.KindAccessDenied, "GOOGLE_APPLICATION_CREDENTIALS"},
		{"token server down", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 503}}, store.KindTransient, ""},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, store.KindTransient, ""},
		{"cut answer", io.ErrUnexpectedEOF, store.KindTransient, ""},
		{"cancelled", context.Canceled, store.KindUnknown, ""},
		{"no generation", ErrNoVersion, store.KindUnknown, ""},
		{"checksum", ErrChecksum, store.KindUnknown, ""},
	} {
		got := classify(c.err)
		if got.Kind != c.want || !strings.Contains(got.Hint, c.hint) || (c.hint == "") != (got.Hint == "") {
			t.Errorf("%s: %+v, want kind %d with hint %q", c.name, got, c.want, c.hint)
		}
	}
}

// recorder is a JSON API that records every request and answers from
// answer (200 with a created object when nil).
type recorder struct {
	mu     sync.Mutex
	reqs   []recorded
	answer func(r *http.Request, body []byte) (int, string)
}

type recorded struct {
	method, path, rawPath string
	query                 map[string][]string
	header                http.Header
	body                  []byte
}

func (f *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.Query(), r.Header.Clone(), body})
	f.mu.Unlock()
	status, out := http.StatusOK, `{"name":"k","generation":"1234","size":"4"}`
	if f.answer != nil {
		status, out = f.answer(r, body)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, out)
}

func (f *recorder) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func openRecorder(t *testing.T, f *recorder) *Store {
	t.Helper()
	srv := httptest.NewServer(f) // 127.0.0.1
	t.Cleanup(srv.Close)
	s, err := NewFromHTTPClient(srv.Client(), Options{Bucket: "bkt", Endpoint: srv.URL + "/storage/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	s.Bucket.Driver().(*driver).sleep = func(context.Context, time.Duration) error { return nil }
	t.Cleanup(func() { s.Close() })
	return s
}

// parts splits a multipart upload into its resource and its media.
func parts(t *testing.T, r recorded) (resource, []byte, string) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil || mt != "multipart/related" {
		t.Fatalf("Content-Type %q: %v", r.header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.body), params["boundary"])
	p, err := mr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	var meta resource
	if err := json.NewDecoder(p).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	p, err = mr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	media, _ := io.ReadAll(p)
	if _, err := mr.NextPart(); err != io.EOF {
		t.Fatalf("a third part: %v", err)
	}
	return meta, media, p.Header.Get("Content-Type")
}

func TestUploadRequests(t *testing.T) {
	body := []byte("body")
	crc := crc32cString(crc32.Checksum(body, castagnoli))
	for _, c := range []struct {
		name string
		cond store.Condition
		gen  []string // ifGenerationMatch
	}{
		{"create-only", store.IfAbsent, []string{"0"}},
		{"compare-and-swap", store.IfVersion("77"), []string{"77"}},
		{"unconditional", store.Condition{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &recorder{}
			s := openRecorder(t, f)
			key := "cells/a b+c/000001.ltx"
			v, err := s.Put(t.Context(), key, body, store.PutOptions{
				Condition: c.cond,
				Metadata:  map[string]string{"litestream-timestamp": "t"},
				Headers:   store.ContentHeaders{ContentType: "application/x-ltx", CacheControl: "no-store"},
			})
			if err != nil || v != "1234" {
				t.Fatalf("put: %q, %v", v, err)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != "/upload/storage/v1/b/bkt/o" || r.query["uploadType"][0] != "multipart" {
				t.Fatalf("%s %s %v", r.method, r.path, r.query)
			}
			if got := r.query["ifGenerationMatch"]; fmt.Sprint(got) != fmt.Sprint(c.gen) {
				t.Errorf("ifGenerationMatch = %v, want %v", got, c.gen)
			}
			meta, media, mediaType := parts(t, r)
			if meta.Name != key || meta.CRC32C != crc || meta.Metadata["litestream-timestamp"] != "t" ||
				meta.ContentType != "application/x-ltx" || meta.CacheControl != "no-store" || mediaType != "application/x-ltx" {
				t.Errorf("resource %+v, media type %q", meta, mediaType)
			}
			if !bytes.Equal(media, body) {
				t.Errorf("media %q", media)
			}
		})
	}
}

// A conditional upload that fails is sent once whatever the failure; an
// unconditional one is tried again on a transient failure only.
func TestUploadRetries(t *testing.T) {
	for _, c := range []struct {
		name   string
		cond   store.Condition
		status int
		want   error
		sent   int
	}{
		{"create-only 503", store.IfAbsent, 503, store.ErrAmbiguous, 1},
		{"compare-and-swap 500", store.IfVersion("7"), 500, store.ErrAmbiguous, 1},
		{"create-only 412", store.IfAbsent, 412, store.ErrPreconditionFailed, 1},
		{"unconditional 503", store.Condition{}, 503, store.ErrAmbiguous, unconditionalAttempts},
		{"unconditional 400", store.Condition{}, 400, nil, 1},
		{"unconditional 401", store.Condition{}, 401, store.ErrAccessDenied, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &recorder{answer: func(*http.Request, []byte) (int, string) {
				return c.status, fmt.Sprintf(`{"error":{"code":%d,"message":"m","errors":[{"reason":"x"}]}}`, c.status)
			}}
			s := openRecorder(t, f)
			_, err := s.Put(t.Context(), "k", []byte("body"), store.PutOptions{Condition: c.cond})
			if err == nil {
				t.Fatal("put succeeded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
			if c.want == nil && (store.IsAmbiguous(err) || store.IsRefused(err)) {
				t.Errorf("err = %v, want a plain failure", err)
			}
			if n := len(f.requests()); n != c.sent {
				t.Errorf("%d requests, want %d", n, c.sent)
			}
		})
	}
}

// A 401 is a definite refusal naming the credential variable, on one line.
func TestAccessDeniedHint(t *testing.T) {
	f := &recorder{answer: func(*http.Request, []byte) (int, string) {
		return 401, `{"error":{"code":401,"message":"Anonymous caller does not have storage.objects.get access","errors":[{"reason":"required"}]}}`
	}}
	s := openRecorder(t, f)
	_, err := s.Get(t.Context(), "k")
	if !errors.Is(err, store.ErrAccessDenied) || store.IsAmbiguous(err) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "GOOGLE_APPLICATION_CREDENTIALS") || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line naming GOOGLE_APPLICATION_CREDENTIALS", msg)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests, want 1 (a refusal is not retried)", n)
	}
}

// Object names are escaped as one path segment: "/" and "+" and " " reach
// the service inside the name.
func TestObjectNamesAreEscaped(t *testing.T) {
	f := &recorder{answer: func(r *http.Request, _ []byte) (int, string) {
		return 404, `{"error":{"code":404,"message":"No such object"}}`
	}}
	s := openRecorder(t, f)
	if _, err := s.Get(t.Context(), "a/b+c d%e"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get: %v", err)
	}
	if err := s.Delete(t.Context(), "a/b+c d%e"); err != nil {
		t.Fatalf("delete of a missing object: %v", err)
	}
	for _, r := range f.requests() {
		if r.rawPath != "/storage/v1/b/bkt/o/a%2Fb%2Bc%20d%25e" {
			t.Errorf("%s %s", r.method, r.rawPath)
		}
	}
}

// A full read fetches the attributes, then that generation's bytes; a
// dataOnly read is one download.
func TestReadRequests(t *testing.T) {
	f := &recorder{}
	f.answer = func(*http.Request, []byte) (int, string) {
		return 200, `{"name":"k","generation":"9","size":"5","metadata":{"M":"v"},"contentLanguage":"fr"}`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("alt") == "media" {
			f.ServeHTTPMedia(w, r)
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s, err := NewFromHTTPClient(srv.Client(), Options{Bucket: "bkt", Endpoint: srv.URL + "/storage/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Get(t.Context(), "k")
	if err != nil || string(o.Data) != "hello" || o.Version != "9" || o.Metadata["m"] != "v" || o.Headers.ContentLanguage != "fr" {
		t.Fatalf("get: %+v, %v", o, err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[1].query["generation"][0] != "9" || reqs[1].header.Get("Accept-Encoding") != "gzip" {
		t.Fatalf("full read: %+v", reqs)
	}
	o, err = store.GetData(t.Context(), s, "k")
	if err != nil || string(o.Data) != "hello" || o.Version != "9" {
		t.Fatalf("get data: %+v, %v", o, err)
	}
	if reqs = f.requests(); len(reqs) != 3 || reqs[2].query["generation"] != nil {
		t.Fatalf("dataOnly read: %d requests, the last %+v", len(reqs), reqs[len(reqs)-1])
	}
}

// ServeHTTPMedia answers a download of "hello" at generation 9.
func (f *recorder) ServeHTTPMedia(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.Query(), r.Header.Clone(), nil})
	f.mu.Unlock()
	w.Header().Set("X-Goog-Generation", "9")
	w.Header().Set("X-Goog-Stored-Content-Length", "5")
	if rng := r.Header.Get("Range"); rng != "" {
		var a, b int
		fmt.Sscanf(rng, "bytes=%d-%d", &a, &b)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/5", a, b))
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, "hello"[a:b+1])
		return
	}
	io.WriteString(w, "hello")
}

// A body longer than one request goes as a resumable session: opened with
// the precondition, chunks as the body is read, the last one with the
// whole body's CRC32C; a body that fails midway cancels the session and
// never sends a last chunk.
func TestResumableUpload(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (chunkSize+chunkSize/2)/16)
	crc := crc32cString(crc32.Checksum(body, castagnoli))
	var srvURL string
	var keepLess atomic.Bool
	f := &recorder{}
	f.answer = func(r *http.Request, b []byte) (int, string) {
		switch {
		case r.Method == http.MethodPost:
			return 200, "{}"
		case r.Method == http.MethodDelete:
			return 499, "{}"
		case strings.HasSuffix(r.Header.Get("Content-Range"), "/*"):
			return http.StatusPermanentRedirect, ""
		}
		return 200, fmt.Sprintf(`{"name":"big","generation":"5","size":"%d","crc32c":%q}`, len(body), crc)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", srvURL+"/session/1")
		}
		var first, last int
		if _, err := fmt.Sscanf(r.Header.Get("Content-Range"), "bytes %d-%d/*", &first, &last); err == nil {
			if keepLess.Load() {
				last -= 10
			}
			w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", last))
		}
		f.ServeHTTP(w, r)
	}))
	srvURL = srv.URL
	t.Cleanup(srv.Close)
	s, err := NewFromHTTPClient(srv.Client(), Options{Bucket: "bkt", Endpoint: srv.URL + "/storage/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.PutFrom(t.Context(), "big", bytes.NewReader(body), -1, store.PutOptions{Condition: store.IfVersion("4")})
	if err != nil || v != "5" {
		t.Fatalf("put: %q, %v", v, err)
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (open, chunk, last chunk)", len(reqs))
	}
	open, chunk, last := reqs[0], reqs[1], reqs[2]
	if open.query["uploadType"][0] != "resumable" || open.query["ifGenerationMatch"][0] != "4" {
		t.Errorf("open: %v", open.query)
	}
	if got := chunk.header.Get("Content-Range"); got != fmt.Sprintf("bytes 0-%d/*", chunkSize-1) || len(chunk.body) != chunkSize {
		t.Errorf("chunk: %q, %d bytes", got, len(chunk.body))
	}
	if got := last.header.Get("Content-Range"); got != fmt.Sprintf("bytes %d-%d/%d", chunkSize, len(body)-1, len(body)) || last.header.Get("X-Goog-Hash") != "crc32c="+crc {
		t.Errorf("last chunk: %q, %q", got, last.header.Get("X-Goog-Hash"))
	}

	// A failing body: the session is cancelled, no last chunk is sent.
	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
	broken := io.MultiReader(bytes.NewReader(body[:chunkSize+10]), iotest{errors.New("disk gone")})
	if _, err := s.PutFrom(t.Context(), "big", broken, -1, store.PutOptions{Condition: store.IfAbsent}); err == nil || store.IsAmbiguous(err) {
		t.Fatalf("put of a failing body: %v, want a plain failure", err)
	}
	var methods []string
	for _, r := range f.requests() {
		methods = append(methods, r.method+" "+r.header.Get("Content-Range"))
	}
	if fmt.Sprint(methods) != fmt.Sprintf("[POST  PUT bytes 0-%d/* DELETE ]", chunkSize-1) {
		t.Errorf("requests: %q", methods)
	}

	// A service that kept less than a chunk: the upload is abandoned, not
	// continued from the wrong offset.
	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
	keepLess.Store(true)
	if _, err := s.PutFrom(t.Context(), "big", bytes.NewReader(body), -1, store.PutOptions{Condition: store.IfAbsent}); err == nil || store.IsAmbiguous(err) {
		t.Fatalf("put with bytes lost: %v, want a plain failure", err)
	}
	if reqs := f.requests(); len(reqs) != 3 || reqs[2].method != http.MethodDelete {
		t.Errorf("%d requests, the last %s", len(reqs), reqs[len(reqs)-1].method)
	}
}

type iotest struct{ err error }

func (e iotest) Read([]byte) (int, error) { return 0, e.err }

// STORAGE_EMULATOR_HOST points the adapter at an emulator without
// credentials, as every Google client does; Options.Endpoint wins over it.
func TestEndpoint(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		opts      Options
		env       map[string]string
		want      string
		anonymous bool
	}{
		{Options{}, nil, defaultEndpoint, false},
		{Options{Anonymous: true}, nil, defaultEndpoint, true},
		{Options{}, map[string]string{emulatorHost: "127.0.0.1:4443"}, "http://127.0.0.1:4443/storage/v1/", true},
		{Options{}, map[string]string{emulatorHost: "https://gcs.test/"}, "https://gcs.test/storage/v1/", true},
		{Options{Endpoint: "http://e/storage/v1/"}, map[string]string{emulatorHost: "127.0.0.1:4443"}, "http://e/storage/v1/", false},
	} {
		got, anon := endpoint(c.opts, env(c.env))
		if got != c.want || anon != c.anonymous {
			t.Errorf("%+v with %v: %q anonymous=%v, want %q %v", c.opts, c.env, got, anon, c.want, c.anonymous)
		}
	}
	s, err := newStore(t.Context(), Options{Bucket: "b"}, env(map[string]string{emulatorHost: "127.0.0.1:1"}))
	if err != nil {
		t.Fatalf("an emulator needs no credentials: %v", err)
	}
	d := s.Bucket.Driver().(*driver)
	if d.api != "http://127.0.0.1:1/storage/v1/" || d.upload != "http://127.0.0.1:1/upload/storage/v1/" {
		t.Errorf("api %q, upload %q", d.api, d.upload)
	}
	s.Close()
}

// A resumable session refused when it is opened, before the body is read,
// keeps the answer's kind: a failed precondition, a refusal with its hint;
// never ambiguous.
func TestResumableSessionRefused(t *testing.T) {
	for _, c := range []struct {
		status int
		want   error
	}{{412, store.ErrPreconditionFailed}, {401, store.ErrAccessDenied}, {403, store.ErrAccessDenied}, {404, store.ErrBucketNotFound}} {
		f := &recorder{answer: func(*http.Request, []byte) (int, string) {
			return c.status, `{"error":{"code":1,"message":"refused"}}`
		}}
		s := openRecorder(t, f)
		_, err := s.PutFrom(t.Context(), "big", bytes.NewReader(make([]byte, chunkSize+5)), -1, store.PutOptions{Condition: store.IfAbsent})
		if !errors.Is(err, c.want) || store.IsAmbiguous(err) {
			t.Errorf("%d: %v, want %v", c.status, err, c.want)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d: %d requests, want 1", c.status, n)
		}
	}
}
