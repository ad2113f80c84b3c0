package r2

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// celldHeaders are the fixture's five HTTP fields as the store's own
// object headers, where celld keeps them (format notes §4.7).
var celldHeaders = store.ContentHeaders{
	ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
	ContentEncoding: "gzip", CacheControl: "public, max-age=3600",
}

// celldRecordExpiryOnly is a record whose "http" holds only the cache
// expiry, the one HTTP field that is not an object header: the other five
// must come from the store's headers.
const celldRecordExpiryOnly = `{"custom":{"mood":"\ud83d\ude00","owner":"ren\u00e9"},` +
	`"http":{"cacheExpiry":1780109201091},` +
	`"checksums":{"md5":"0cc175b9c0f1b6a831c399e269772661","sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},` +
	`"storageClass":"InfrequentAccess"}`

// TestCelldStoreHeadersReadBack: celld objects whose content headers are
// the store's own headers read back with every field through Head, Get and
// List, in both spellings of the metadata name, whether the record repeats
// the headers or not.
func TestCelldStoreHeadersReadBack(t *testing.T) {
	ctx := t.Context()
	for _, rec := range []struct{ name, value string }{{"record-repeats-headers", celldRecord}, {"record-has-expiry-only", celldRecordExpiryOnly}} {
		for _, spelling := range []string{"celld-r2", "celld_r2"} {
			t.Run(rec.name+"/"+spelling, func(t *testing.T) {
				mem := memstore.New()
				var s store.Store = mem
				if spelling == "celld_r2" {
					s = azureNames{mem}
				}
				if _, err := mem.Put(ctx, "r2/images/cats/cat.png", []byte("a"), store.PutOptions{
					Metadata: map[string]string{"celld-r2": rec.value}, Headers: celldHeaders,
				}); err != nil {
					t.Fatal(err)
				}
				b, _ := New(s, "images")
				h, err := b.Head(ctx, "cats/cat.png")
				if err != nil {
					t.Fatal(err)
				}
				wantCelldObject(t, h)
				ob, err := b.Get(ctx, "cats/cat.png", GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ob.Close()
				wantCelldObject(t, ob.Object)
				l, err := b.List(ctx, ListOptions{Include: []string{IncludeHTTPMetadata, IncludeCustomMetadata}})
				if err != nil || len(l.Objects) != 1 {
					t.Fatalf("list: %v, %d objects", err, len(l.Objects))
				}
				wantCelldObject(t, l.Objects[0])
			})
		}
	}
}

// TestPutWritesStoreHeaders: Put (whole and streamed) and a multipart
// upload store the five HTTP fields as the store's own headers, and the
// record keeps them too.
func TestPutWritesStoreHeaders(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	b, _ := New(s, "images")
	opts := PutOptions{HTTPMetadata: HTTPMetadata{
		ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
		ContentEncoding: "gzip", CacheControl: "public, max-age=3600", CacheExpiry: time.UnixMilli(1780109201091),
	}}
	if _, err := b.Put(ctx, "small", strings.NewReader("a"), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "large", strings.NewReader(strings.Repeat("x", SinglePutMax+1)), opts); err != nil {
		t.Fatal(err)
	}
	u, err := b.CreateMultipartUpload(ctx, "parts", opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := u.UploadPart(ctx, 1, strings.NewReader("part"), 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Complete(ctx, []UploadedPart{p}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"small", "large", "parts"} {
		raw, err := store.NewRangeReader(ctx, s, "r2/images/"+k, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		raw.Close()
		if raw.Headers != celldHeaders {
			t.Errorf("%s: the store's headers are %+v, want %+v", k, raw.Headers, celldHeaders)
		}
		if !strings.Contains(raw.Metadata["celld-r2"], `"cacheExpiry":1780109201091`) {
			t.Errorf("%s: the record %s lost the cache expiry", k, raw.Metadata["celld-r2"])
		}
	}
}

// TestStoreDefaultTypeIsNotTaken: a store that reports its default type
// for an object put without one does not give the object that type when
// the record says it has none; a type the record names is kept.
func TestStoreDefaultTypeIsNotTaken(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	b, _ := New(s, "b")
	s.Put(ctx, "r2/b/none", []byte("x"), store.PutOptions{Metadata: map[string]string{"celld-r2": `{"http":{}}`},
		Headers: store.ContentHeaders{ContentType: "binary/octet-stream"}})
	s.Put(ctx, "r2/b/plain", []byte("x"), store.PutOptions{Headers: store.ContentHeaders{ContentType: "application/octet-stream"}})
	if h, err := b.Head(ctx, "none"); err != nil || h.HTTPMetadata.ContentType != "" {
		t.Errorf("enveloped object without a type: %+v, %v", h, err)
	}
	s.Put(ctx, "r2/b/typed", []byte("x"), store.PutOptions{Metadata: map[string]string{"celld-r2": `{"http":{"contentType":"image/png"}}`},
		Headers: store.ContentHeaders{ContentType: "application/octet-stream"}})
	if h, err := b.Head(ctx, "typed"); err != nil || h.HTTPMetadata.ContentType != "image/png" {
		t.Errorf("record-typed object on a store reporting its default: %+v, %v", h, err)
	}
	if h, err := b.Head(ctx, "plain"); err != nil || h.HTTPMetadata.ContentType != "application/octet-stream" {
		t.Errorf("object without a record: %+v, %v", h, err)
	}
}

// TestHeaderValuesTheStoreCannotHoldAreTyped: an HTTP field outside
// printable ASCII cannot be an object header and fails before writing.
func TestHeaderValuesTheStoreCannotHoldAreTyped(t *testing.T) {
	ctx := t.Context()
	b, _ := New(memstore.New(), "b")
	_, err := b.Put(ctx, "k", strings.NewReader("x"), PutOptions{HTTPMetadata: HTTPMetadata{ContentDisposition: `inline; filename="café.png"`}})
	var me *MetadataError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "store's own headers") {
		t.Fatalf("got %v", err)
	}
	if _, err := b.Head(ctx, "k"); err == nil {
		t.Fatal("the object was written")
	}
}
