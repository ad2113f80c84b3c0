package storetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/cellb/cellb/core/store"
)

// someHeaders are content headers with every field set, in the shapes R2
// objects carry (celld stores them as the store's own headers).
var someHeaders = store.ContentHeaders{
	ContentType:        "image/png",
	ContentLanguage:    "en-GB",
	ContentDisposition: `attachment; filename="cat picture.png"`,
	ContentEncoding:    "identity",
	CacheControl:       "public, max-age=3600, immutable",
}

// otherHeaders differ from someHeaders in every field.
var otherHeaders = store.ContentHeaders{
	ContentType:        "text/plain; charset=utf-8",
	ContentLanguage:    "fr",
	ContentDisposition: "inline",
	ContentEncoding:    "br",
	CacheControl:       "no-store",
}

// sameHeaders compares headers, allowing the store's default content type
// for an object put without one.
func sameHeaders(got, want store.ContentHeaders) bool {
	if want.ContentType == "" && store.DefaultContentType(got.ContentType) {
		got.ContentType = ""
	}
	return got == want
}

// checkHeaders reads key through Get, a whole stream and an empty range
// (a head) from client c and checks its headers and body.
func checkHeaders(t tb, ctx context.Context, c store.Store, what, key string, body []byte, v store.Version, want store.ContentHeaders) {
	t.Helper()
	o, err := c.Get(ctx, key)
	if err != nil {
		t.Errorf("%s: get: %v", what, err)
		return
	}
	checkBody(t, what, o, body, v)
	if !sameHeaders(o.Headers, want) {
		t.Errorf("%s: get returned headers %+v, want %+v", what, o.Headers, want)
	}
	for _, r := range []struct {
		name        string
		off, length int64
	}{{"stream", 0, -1}, {"head (empty range)", 0, 0}, {"range", 1, 2}} {
		rd, err := store.NewRangeReader(ctx, c, key, r.off, r.length)
		if err != nil {
			t.Errorf("%s: %s read: %v", what, r.name, err)
			continue
		}
		got, err := io.ReadAll(rd)
		rd.Close()
		wantBody := body[r.off:]
		if r.length >= 0 {
			wantBody = wantBody[:min(int64(len(wantBody)), r.length)]
		}
		if err != nil || !bytes.Equal(got, wantBody) || rd.Version != v {
			t.Errorf("%s: %s read: %d bytes, version %q, %v; want %d bytes of version %q", what, r.name, len(got), rd.Version, err, len(wantBody), v)
		}
		if !sameHeaders(rd.Headers, want) {
			t.Errorf("%s: %s read returned headers %+v, want %+v", what, r.name, rd.Headers, want)
		}
	}
}

// testContentHeaders: the content headers of a put come back from Get,
// from stream reads and from an empty-range read, through both clients;
// an overwrite replaces them; bad values are refused and write nothing.
func testContentHeaders(t tb, e *env) {
	ctx, k := e.ctx, e.key("headers")
	b := e.body("with headers")
	v := mustPut(t, ctx, e.s, k, b, store.PutOptions{Headers: someHeaders, Metadata: map[string]string{"a": "1"}})
	for _, c := range []store.Store{e.s, e.s2} {
		checkHeaders(t, ctx, c, "object put with headers", k, b, v, someHeaders)
	}
	if o := mustGet(t, ctx, e.s, k); !sameMetadata(o.Metadata, map[string]string{"a": "1"}) {
		t.Errorf("metadata beside headers read back as %q", o.Metadata)
	}

	// Each header alone, so a store that maps one to another is caught.
	for i, f := range someHeaders.Fields() {
		var h store.ContentHeaders
		switch i {
		case 0:
			h.ContentType = f[1]
		case 1:
			h.ContentLanguage = f[1]
		case 2:
			h.ContentDisposition = f[1]
		case 3:
			h.ContentEncoding = f[1]
		case 4:
			h.CacheControl = f[1]
		}
		ki := e.key("headers-one/" + strings.ToLower(f[0]))
		bi := e.body(f[0])
		vi := mustPut(t, ctx, e.s, ki, bi, store.PutOptions{Headers: h})
		checkHeaders(t, ctx, e.s2, "object put with only "+f[0], ki, bi, vi, h)
	}

	// An overwrite without headers leaves none; one with others has them.
	b2 := e.body("without headers")
	v2 := mustPut(t, ctx, e.s2, k, b2, store.PutOptions{})
	checkHeaders(t, ctx, e.s, "object overwritten without headers", k, b2, v2, store.ContentHeaders{})
	b3 := e.body("other headers")
	v3 := mustPut(t, ctx, e.s, k, b3, store.PutOptions{Headers: otherHeaders})
	checkHeaders(t, ctx, e.s2, "object overwritten with other headers", k, b3, v3, otherHeaders)

	// Bad values are refused and nothing is written.
	bad := e.key("bad-headers")
	for _, h := range []store.ContentHeaders{
		{ContentType: "text/plain\r\nX-Injected: 1"},
		{ContentDisposition: "attachment; filename=\"café.png\""},
		{CacheControl: " no-cache"},
		{ContentLanguage: strings.Repeat("a", store.MaxHeaderLen+1)},
	} {
		_, err := e.s.Put(ctx, bad, e.body("bad"), store.PutOptions{Headers: h})
		if !errors.Is(err, store.ErrInvalidHeaders) {
			t.Errorf("put with headers %+v: %v, want ErrInvalidHeaders", h, err)
		}
		_, err = store.PutFrom(ctx, e.s, bad, bytes.NewReader(e.body("bad")), -1, store.PutOptions{Headers: h})
		if !errors.Is(err, store.ErrInvalidHeaders) {
			t.Errorf("streamed put with headers %+v: %v, want ErrInvalidHeaders", h, err)
		}
	}
	if _, err := e.s.Get(ctx, bad); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after puts with bad headers, get: %v, want ErrNotFound", err)
	}
}

// testHeadersConditional: headers go with create-only and compare-and-swap
// writes, whole and streamed, and a failed condition leaves the old
// object's headers as they were.
func testHeadersConditional(t tb, e *env) {
	ctx, k := e.ctx, e.key("headers-cas")
	b := e.body("created")
	v := mustPut(t, ctx, e.s, k, b, store.PutOptions{Condition: store.IfAbsent, Headers: someHeaders})
	checkHeaders(t, ctx, e.s2, "object created only-if-absent with headers", k, b, v, someHeaders)

	b2 := e.body("replaced")
	v2 := mustPut(t, ctx, e.s2, k, b2, store.PutOptions{Condition: store.IfVersion(v), Headers: otherHeaders})
	checkHeaders(t, ctx, e.s, "object replaced by compare-and-swap with headers", k, b2, v2, otherHeaders)

	// A stale replace fails and the headers stay.
	if _, err := e.s.Put(ctx, k, e.body("stale"), store.PutOptions{Condition: store.IfVersion(v), Headers: someHeaders}); !store.IsPreconditionFailed(err) {
		t.Errorf("compare-and-swap on a stale version: %v, want ErrPreconditionFailed", err)
	}
	checkHeaders(t, ctx, e.s2, "object after a failed compare-and-swap", k, b2, v2, otherHeaders)

	// Streamed: created, then replaced, each with its headers.
	ks := e.key("headers-cas-stream")
	bs := e.body("streamed")
	vs, err := store.PutFrom(ctx, e.s, ks, &trickle{data: bs}, -1, store.PutOptions{Condition: store.IfAbsent, Headers: otherHeaders})
	if err != nil {
		t.Fatalf("streamed create-only put with headers: %v", err)
	}
	checkHeaders(t, ctx, e.s2, "streamed object created with headers", ks, bs, vs, otherHeaders)
	bs2 := e.body("streamed again")
	vs2, err := store.PutFrom(ctx, e.s2, ks, bytes.NewReader(bs2), int64(len(bs2)), store.PutOptions{Condition: store.IfVersion(vs), Headers: someHeaders})
	if err != nil {
		t.Fatalf("streamed compare-and-swap with headers: %v", err)
	}
	checkHeaders(t, ctx, e.s, "streamed object replaced with headers", ks, bs2, vs2, someHeaders)

	// A body of several parts (a multipart upload, a resumable upload, a
	// block list) carries its headers too.
	kl := e.key("headers-cas-large")
	bl := e.streamBody("large with headers")
	vl, err := store.PutFrom(ctx, e.s2, kl, &trickle{data: bl}, -1, store.PutOptions{Condition: store.IfAbsent, Headers: someHeaders})
	if err != nil {
		t.Fatalf("large streamed put with headers: %v", err)
	}
	checkHeaders(t, ctx, e.s, "large streamed object", kl, bl, vl, someHeaders)
}

// gzipped compresses data.
func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

// testGzipBody: an object stored with Content-Encoding gzip is only
// labelled: every read returns the stored (compressed) bytes unchanged,
// and its size is theirs, as celld's R2 objects need (a Worker decides
// what to do with the encoding, not the bucket).
func testGzipBody(t tb, e *env) {
	ctx := e.ctx
	plain := bytes.Repeat([]byte("a gzip-encoded body must come back compressed. "), 200)
	body := gzipped(plain)
	h := store.ContentHeaders{ContentType: "text/plain", ContentEncoding: "gzip"}
	k := e.key("gzip")
	v := mustPut(t, ctx, e.s, k, body, store.PutOptions{Headers: h})
	for _, c := range []store.Store{e.s, e.s2} {
		checkHeaders(t, ctx, c, "gzip-encoded object", k, body, v, h)
		rd, err := store.NewReader(ctx, c, k)
		if err != nil {
			t.Errorf("gzip-encoded object: read: %v", err)
			continue
		}
		rd.Close()
		if rd.Size != int64(len(body)) || rd.Length != int64(len(body)) {
			t.Errorf("gzip-encoded object: size %d, length %d; stored %d bytes (%d decompressed)", rd.Size, rd.Length, len(body), len(plain))
		}
	}
	ks := e.key("gzip-stream")
	vs, err := store.PutFrom(ctx, e.s2, ks, &trickle{data: body}, -1, store.PutOptions{Headers: h})
	if err != nil {
		t.Fatalf("streamed put of a gzip-encoded body: %v", err)
	}
	checkHeaders(t, ctx, e.s, "streamed gzip-encoded object", ks, body, vs, h)
}
