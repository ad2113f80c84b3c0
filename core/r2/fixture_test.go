package r2

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// celldRecord is a celld-r2 value written by hand from the format notes
// (celld-bucket-format.md §4.7) and celld's serde types: compact JSON in
// celld's field order, the custom map's keys in order, every
// character outside ASCII escaped (é, and 😀 as a surrogate pair), the
// cache expiry in milliseconds, checksums in hex.
const celldRecord = `{"custom":{"mood":"\ud83d\ude00","owner":"ren\u00e9"},` +
	`"http":{"contentType":"image/png","contentLanguage":"en-GB","contentDisposition":"inline; filename=\"cat.png\"",` +
	`"contentEncoding":"gzip","cacheControl":"public, max-age=3600","cacheExpiry":1780109201091},` +
	`"checksums":{"md5":"0cc175b9c0f1b6a831c399e269772661","sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},` +
	`"storageClass":"InfrequentAccess"}`

func wantCelldObject(t *testing.T, o *Object) {
	t.Helper()
	wantHTTP := HTTPMetadata{
		ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
		ContentEncoding: "gzip", CacheControl: "public, max-age=3600", CacheExpiry: time.UnixMilli(1780109201091).UTC(),
	}
	if o.HTTPMetadata != wantHTTP {
		t.Errorf("http metadata %+v, want %+v", o.HTTPMetadata, wantHTTP)
	}
	if want := map[string]string{"owner": "rené", "mood": "😀"}; !maps.Equal(o.CustomMetadata, want) {
		t.Errorf("custom metadata %v, want %v", o.CustomMetadata, want)
	}
	if hex.EncodeToString(o.Checksums.MD5) != "0cc175b9c0f1b6a831c399e269772661" ||
		hex.EncodeToString(o.Checksums.SHA256) != "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" ||
		o.Checksums.SHA1 != nil || o.Checksums.SHA384 != nil || o.Checksums.SHA512 != nil {
		t.Errorf("checksums %+v", o.Checksums)
	}
	if o.StorageClass != "InfrequentAccess" || o.Size != 1 || o.Key != "cats/cat.png" {
		t.Errorf("class %q size %d key %q", o.StorageClass, o.Size, o.Key)
	}
}

// azureNames is a store that hands back metadata names as Azure stores
// them ('-' written '_'), as a client without the adapter's mapping sees
// celld's objects.
type azureNames struct{ store.Store }

func (a azureNames) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := a.Store.Get(ctx, key)
	if err == nil {
		o.Metadata = underscored(o.Metadata)
	}
	return o, err
}

func underscored(md map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		out[strings.ReplaceAll(k, "-", "_")] = v
	}
	return out
}

// TestCelldFixtureReadsBack: an object written as celld writes it reads
// back with every field, through Head, Get and List, in both spellings of
// the metadata name.
func TestCelldFixtureReadsBack(t *testing.T) {
	ctx := t.Context()
	for _, spelling := range []string{"celld-r2", "celld_r2"} {
		t.Run(spelling, func(t *testing.T) {
			mem := memstore.New()
			var s store.Store = mem
			if spelling == "celld_r2" {
				s = azureNames{mem} // a Store without Streamer: reads go through Get
			}
			v, err := mem.Put(ctx, "r2/images/cats/cat.png", []byte("a"), store.PutOptions{Metadata: map[string]string{"celld-r2": celldRecord}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := New(s, "images")
			if err != nil {
				t.Fatal(err)
			}
			h, err := b.Head(ctx, "cats/cat.png")
			if err != nil {
				t.Fatal(err)
			}
			wantCelldObject(t, h)
			if h.Version != string(v) || h.ETag != strings.Trim(string(v), `"`) || h.Uploaded.IsZero() {
				t.Errorf("version %q etag %q uploaded %v; the store's version is %q", h.Version, h.ETag, h.Uploaded, v)
			}
			ob, err := b.Get(ctx, "cats/cat.png", GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(ob)
			ob.Close()
			if string(body) != "a" {
				t.Errorf("body %q", body)
			}
			wantCelldObject(t, ob.Object)
			l, err := b.List(ctx, ListOptions{Include: []string{IncludeHTTPMetadata, IncludeCustomMetadata}})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Objects) != 1 {
				t.Fatalf("listed %d objects", len(l.Objects))
			}
			wantCelldObject(t, l.Objects[0])
		})
	}
}

// TestWrittenRecordFollowsTheNotes: the record CellB writes for the
// fixture's fields is the fixture's bytes (celld's field order, compact,
// ASCII-escaped), and decodes on the notes' rules with a plain JSON reader.
func TestWrittenRecordFollowsTheNotes(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	b, _ := New(s, "images")
	md5a, _ := hex.DecodeString("0cc175b9c0f1b6a831c399e269772661")
	sha, _ := hex.DecodeString("ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb")
	opts := PutOptions{
		HTTPMetadata: HTTPMetadata{
			ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
			ContentEncoding: "gzip", CacheControl: "public, max-age=3600", CacheExpiry: time.UnixMilli(1780109201091),
		},
		CustomMetadata: map[string]string{"owner": "rené", "mood": "😀"},
		Checksums:      Checksums{MD5: md5a, SHA256: sha},
		StorageClass:   "InfrequentAccess",
	}
	if _, err := b.Put(ctx, "cats/cat.png", strings.NewReader("a"), opts); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Get(ctx, "r2/images/cats/cat.png")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Metadata) != 1 || string(raw.Data) != "a" {
		t.Fatalf("stored metadata %v body %q", raw.Metadata, raw.Data)
	}
	rec := raw.Metadata["celld-r2"]
	// celld's custom map is a BTreeMap: keys in order, as Go writes them.
	if rec != celldRecord {
		t.Errorf("record\n got %s\nwant %s", rec, celldRecord)
	}
	var generic map[string]any
	if err := json.Unmarshal([]byte(rec), &generic); err != nil {
		t.Fatal(err)
	}
	if generic["storageClass"] != "InfrequentAccess" || generic["http"].(map[string]any)["cacheExpiry"] != float64(1780109201091) ||
		generic["checksums"].(map[string]any)["md5"] != "0cc175b9c0f1b6a831c399e269772661" || generic["custom"].(map[string]any)["owner"] != "rené" {
		t.Errorf("record decodes to %v", generic)
	}
	// Empty maps and fields are left out.
	if _, err := b.Put(ctx, "bare", nil, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	bare, _ := s.Get(ctx, "r2/images/bare")
	// As celld writes an empty put: "http" always, the MD5 of the body.
	if got := bare.Metadata["celld-r2"]; got != `{"http":{},"checksums":{"md5":"d41d8cd98f00b204e9800998ecf8427e"}}` {
		t.Errorf("bare record %s", got)
	}
}

func TestNoEnvelopeReadsUserMetadata(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	if _, err := s.Put(ctx, "r2/b/k", []byte("x"), store.PutOptions{Metadata: map[string]string{"sha256": "abc", "owner": "me"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := New(s, "b")
	h, err := b.Head(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(h.CustomMetadata, map[string]string{"sha256": "abc", "owner": "me"}) || h.StorageClass != "Standard" || h.HTTPMetadata != (HTTPMetadata{}) {
		t.Errorf("read %+v", h)
	}
}

func TestBadRecordIsTyped(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	s.Put(ctx, "r2/b/k", []byte("x"), store.PutOptions{Metadata: map[string]string{"celld-r2": "{not json"}})
	b, _ := New(s, "b")
	_, err := b.Head(ctx, "k")
	var me *MetadataError
	if !errors.As(err, &me) || !errors.Is(err, ErrInvalidMetadata) {
		t.Fatalf("got %v", err)
	}
}

func TestErrorsMatch(t *testing.T) {
	ctx := t.Context()
	b, _ := New(memstore.New(), "b")
	_, err := b.Head(ctx, "missing")
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, store.ErrNotFound) || err.Error() != "r2 b/missing: the specified key does not exist" {
		t.Errorf("missing: %v", err)
	}
	_, err = b.Put(ctx, "", nil, PutOptions{})
	if !errors.Is(err, ErrInvalidKey) || err.Error() != `r2 key "": the specified object name is not valid: empty key` {
		t.Errorf("empty key: %v", err)
	}
	long := strings.Repeat("é", 400) // 800 bytes, 2400 once encoded
	_, err = b.Put(ctx, long, nil, PutOptions{})
	var ke *KeyError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "once encoded, longer than the store's 1024") {
		t.Errorf("a key too long once encoded: %v", err)
	}
	if _, err := New(memstore.New(), "a/b"); !errors.Is(err, ErrInvalidBucket) {
		t.Errorf("bucket a/b: %v", err)
	}
	big := map[string]string{"v": strings.Repeat("x", 1100)}
	if _, err := b.Put(ctx, "k", nil, PutOptions{CustomMetadata: big}); !errors.Is(err, ErrInvalidMetadata) {
		t.Errorf("a record larger than the store's metadata: %v", err)
	}
}

// TestConditionalPutsRace: 24 writers read the same ETag and each put
// conditionally on it; exactly one wins, every other gets a typed
// precondition failure, and the object holds the winner's body.
func TestConditionalPutsRace(t *testing.T) {
	ctx := t.Context()
	b, _ := New(memstore.New(), "b")
	first, err := b.Put(ctx, "k", strings.NewReader("start"), PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.Put(ctx, "k", strings.NewReader(strings.Repeat("w", i+1)), PutOptions{OnlyIf: &Conditional{EtagMatches: first.ETag}})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, ErrPreconditionFailed):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer won")
	}
	ob, err := b.Get(ctx, "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ob)
	ob.Close()
	if !bytes.Equal(body, bytes.Repeat([]byte("w"), won+1)) {
		t.Errorf("object holds %q, the winner wrote %d bytes", body, won+1)
	}
}

// exactReader is a streaming store that reads a body of declared size
// with io.ReadFull and never asks for its end, as an adapter cutting
// fixed-size parts may.
type exactReader struct{ *memstore.Store }

func (e exactReader) NewRangeReader(ctx context.Context, key string, off, n int64) (*store.Reader, error) {
	return e.Store.NewRangeReader(ctx, key, off, n)
}

func (e exactReader) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if size < 0 {
		return store.PutFrom(ctx, e.Store, key, r, size, opts)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", &store.OpError{Op: "put", Key: key, Err: err}
	}
	return e.Store.Put(ctx, key, buf, opts)
}

// TestChecksumCheckedAtDeclaredSize: a wrong checksum fails the body when
// it reaches its declared size, before a store that reads no further
// publishes it.
func TestChecksumCheckedAtDeclaredSize(t *testing.T) {
	ctx := t.Context()
	b, _ := New(exactReader{memstore.New()}, "b")
	wrong := make([]byte, 32)
	body := strings.Repeat("x", SinglePutMax+10) // streamed, not read whole
	_, err := b.Put(ctx, "k", strings.NewReader(body), PutOptions{Size: int64(len(body)), Checksums: Checksums{SHA256: wrong}})
	if !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("got %v", err)
	}
	if _, err := b.Head(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the object was published: %v", err)
	}
}
