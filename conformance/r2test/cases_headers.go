package r2test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

// wantHeaders are fullOpts' five HTTP fields as store headers.
func wantHeaders(h r2.HTTPMetadata) store.ContentHeaders {
	return store.ContentHeaders{ContentType: h.ContentType, ContentLanguage: h.ContentLanguage,
		ContentDisposition: h.ContentDisposition, ContentEncoding: h.ContentEncoding, CacheControl: h.CacheControl}
}

// caseStoreHeaders: the five HTTP fields are the store's own object
// headers of what Put (small and streamed) and a multipart upload write,
// as celld keeps them.
func caseStoreHeaders(t tb, e *env) {
	put(t, e, "small", "small", fullOpts)
	put(t, e, "streamed", strings.Repeat("s", r2.SinglePutMax+1), fullOpts)
	u, err := e.b.CreateMultipartUpload(e.ctx, "parts", fullOpts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	p, err := u.UploadPart(e.ctx, 1, strings.NewReader("part"), 4)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := u.Complete(e.ctx, []r2.UploadedPart{p}); err != nil {
		t.Fatalf("%v", err)
	}
	want := wantHeaders(fullOpts.HTTPMetadata)
	for _, k := range []string{"small", "streamed", "parts"} {
		rd, err := store.NewRangeReader(e.ctx, e.s, layout.R2Key(e.bucket, k), 0, 0)
		if err != nil {
			t.Fatalf("raw head %s: %v", k, err)
		}
		rd.Close()
		if rd.Headers != want {
			t.Errorf("%s: the store's own headers are %+v, want %+v", k, rd.Headers, want)
		}
	}
}

// celldFixtureRecord is a celld-r2 value as celld writes it beside store
// headers (format notes §4.7): custom metadata (non-ASCII escaped), the
// cache expiry in ms (the one HTTP field that is not a header), checksums
// in hex, a storage class.
const celldFixtureRecord = `{"custom":{"mood":"\ud83d\ude00","owner":"ren\u00e9"},` +
	`"http":{"cacheExpiry":1780109201091},` +
	`"checksums":{"md5":"0cc175b9c0f1b6a831c399e269772661"},"storageClass":"InfrequentAccess"}`

var celldFixtureHeaders = store.ContentHeaders{
	ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
	ContentEncoding: "identity", CacheControl: "public, max-age=3600",
}

func wantFixture(t tb, what string, o *r2.Object) {
	t.Helper()
	want := r2.HTTPMetadata{
		ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
		ContentEncoding: "identity", CacheControl: "public, max-age=3600", CacheExpiry: time.UnixMilli(1780109201091).UTC(),
	}
	if !o.HTTPMetadata.CacheExpiry.Equal(want.CacheExpiry) {
		t.Errorf("%s: cache expiry %v, want %v", what, o.HTTPMetadata.CacheExpiry, want.CacheExpiry)
	}
	got := o.HTTPMetadata
	got.CacheExpiry = want.CacheExpiry
	if got != want {
		t.Errorf("%s: HTTP metadata %+v, want %+v", what, o.HTTPMetadata, want)
	}
	if !maps.Equal(o.CustomMetadata, map[string]string{"owner": "rené", "mood": "😀"}) {
		t.Errorf("%s: custom metadata %v", what, o.CustomMetadata)
	}
	if hex.EncodeToString(o.Checksums.MD5) != "0cc175b9c0f1b6a831c399e269772661" || o.StorageClass != "InfrequentAccess" || o.Size != 1 {
		t.Errorf("%s: md5 %x class %q size %d", what, o.Checksums.MD5, o.StorageClass, o.Size)
	}
}

// azureSpelling hands back metadata names as Azure stores them ('-' as
// '_'), as celld's objects look to a client without the adapter's mapping.
type azureSpelling struct{ store.Store }

func underscore(md map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		out[strings.ReplaceAll(k, "-", "_")] = v
	}
	return out
}

func (a azureSpelling) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := a.Store.Get(ctx, key)
	if err == nil {
		o.Metadata = underscore(o.Metadata)
	}
	return o, err
}

func (a azureSpelling) NewRangeReader(ctx context.Context, key string, off, n int64) (*store.Reader, error) {
	r, err := store.NewRangeReader(ctx, a.Store, key, off, n)
	if err == nil {
		r.Metadata = underscore(r.Metadata)
	}
	return r, err
}

func (a azureSpelling) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return store.PutFrom(ctx, a.Store, key, r, size, opts)
}

// caseCelldFixture: an object written as celld writes it — the body, the
// five HTTP fields as the store's own headers, the rest in celld-r2 —
// reads back with every field through Head, Get and List, and so does it
// with the record's name in Azure's spelling (celld_r2).
func caseCelldFixture(t tb, e *env) {
	if _, err := e.s.Put(e.ctx, layout.R2Key(e.bucket, "cats/cat.png"), []byte("a"), store.PutOptions{
		Metadata: map[string]string{r2.MetadataName: celldFixtureRecord}, Headers: celldFixtureHeaders,
	}); err != nil {
		t.Fatalf("%v", err)
	}
	for _, spelling := range []string{"celld-r2", "celld_r2"} {
		b := e.b
		if spelling == "celld_r2" {
			var err error
			if b, err = e.bind(azureSpelling{e.s}, e.bucket); err != nil {
				t.Fatalf("%v", err)
			}
		}
		h, err := b.Head(e.ctx, "cats/cat.png")
		if err != nil {
			t.Fatalf("%s: head: %v", spelling, err)
		}
		wantFixture(t, spelling+" head", h)
		ob, err := b.Get(e.ctx, "cats/cat.png", r2.GetOptions{})
		if err != nil {
			t.Fatalf("%s: get: %v", spelling, err)
		}
		body, _ := io.ReadAll(ob)
		ob.Close()
		if string(body) != "a" {
			t.Errorf("%s: body %q", spelling, body)
		}
		wantFixture(t, spelling+" get", ob.Object)
		l, err := b.List(e.ctx, r2.ListOptions{Include: []string{r2.IncludeHTTPMetadata, r2.IncludeCustomMetadata}})
		if err != nil || len(l.Objects) != 1 {
			t.Fatalf("%s: list: %v (%d objects)", spelling, err, len(l.Objects))
		}
		wantFixture(t, spelling+" list", l.Objects[0])
	}
}

// caseGzipBody: an object put with Content-Encoding gzip reads back with
// the stored (compressed) bytes: the bucket never decodes it.
func caseGzipBody(t tb, e *env) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.Repeat([]byte("compressed R2 body "), 500))
	zw.Close()
	opts := r2.PutOptions{HTTPMetadata: r2.HTTPMetadata{ContentType: "text/plain", ContentEncoding: "gzip"}}
	put(t, e, "z.txt", buf.String(), opts)
	ob, got := readAll(t, e, "z.txt", r2.GetOptions{})
	if got != buf.String() || ob.Size != int64(buf.Len()) {
		t.Errorf("a gzip-encoded object read back as %d bytes (size %d), stored %d", len(got), ob.Size, buf.Len())
	}
	sameRecord(t, "gzip-encoded object", ob.Object, opts)
	_, part := readAll(t, e, "z.txt", r2.GetOptions{Range: &r2.Range{Offset: 0, Length: 2}})
	if part != "\x1f\x8b" {
		t.Errorf("the first two bytes are %q, not gzip's magic", part)
	}
}
