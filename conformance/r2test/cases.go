package r2test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/layout"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

var cases = []testCase{
	{"put-get", "a Put's body and record read back whole through Get and Head", casePutGet},
	{"format", "the store holds celld's format: the body, and one ASCII JSON record in celld-r2", caseFormat},
	{"store-headers", "the five HTTP fields are the store's own object headers (Put, streamed Put, multipart)", caseStoreHeaders},
	{"celld-fixture", "an object as celld writes it (headers as store headers, the rest in celld-r2 or celld_r2) reads back with every field", caseCelldFixture},
	{"gzip-body", "a gzip-encoded object reads back as stored, never decoded", caseGzipBody},
	{"no-envelope", "an object without celld-r2 reads with its user metadata as custom metadata", caseNoEnvelope},
	{"etag", "the ETag and version are the store's version of the object, and change with it", caseEtag},
	{"conditional-put", "a Put whose onlyIf fails writes nothing and says so with a typed error", caseConditionalPut},
	{"conditional-race", "of 20 writers putting on the same ETag at once, exactly one wins", caseConditionalRace},
	{"conditional-get", "a Get whose onlyIf fails returns the record and no body", caseConditionalGet},
	{"range", "ranged Gets: offset and length, offset to the end, suffix", caseRange},
	{"checksums", "given checksums are verified; a mismatch writes nothing", caseChecksums},
	{"delete", "Delete removes one or many objects; a missing key is no error; Head then fails typed", caseDelete},
	{"list", "List: prefix, delimiter, cursor and limit, include of metadata", caseList},
	{"key-encoding", "keys are stored percent-encoded as celld stores them, and list back as written", caseKeyEncoding},
	{"invalid-keys", "empty and over-long keys fail with a typed error", caseInvalidKeys},
	{"multipart", "a multipart upload's parts join into one object in celld's format", caseMultipart},
}

func put(t tb, e *env, key, body string, opts r2.PutOptions) *r2.Object {
	t.Helper()
	o, err := e.b.Put(e.ctx, key, strings.NewReader(body), opts)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return o
}

func readAll(t tb, e *env, key string, opts r2.GetOptions) (*r2.ObjectBody, string) {
	t.Helper()
	ob, err := e.b.Get(e.ctx, key, opts)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer ob.Close()
	data, err := io.ReadAll(ob)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return ob, string(data)
}

// raw reads the object as the store holds it.
func raw(t tb, e *env, key string) *store.Object {
	t.Helper()
	o, err := e.s.Get(e.ctx, layout.R2Key(e.bucket, key))
	if err != nil {
		t.Fatalf("raw get %s: %v", layout.R2Key(e.bucket, key), err)
	}
	return o
}

var fullOpts = r2.PutOptions{
	HTTPMetadata: r2.HTTPMetadata{
		ContentType: "text/plain; charset=utf-8", ContentLanguage: "fr", ContentDisposition: `attachment; filename="a.txt"`,
		ContentEncoding: "identity", CacheControl: "max-age=60", CacheExpiry: time.UnixMilli(1780109201091).UTC(),
	},
	CustomMetadata: map[string]string{"owner": "café ☕", "n": "1", "<tag>": "a&b"},
	StorageClass:   "InfrequentAccess",
}

func sameRecord(t tb, what string, got *r2.Object, want r2.PutOptions) {
	t.Helper()
	if got.HTTPMetadata != want.HTTPMetadata {
		t.Errorf("%s: HTTP metadata %+v, want %+v", what, got.HTTPMetadata, want.HTTPMetadata)
	}
	if !maps.Equal(got.CustomMetadata, want.CustomMetadata) {
		t.Errorf("%s: custom metadata %v, want %v", what, got.CustomMetadata, want.CustomMetadata)
	}
}

func casePutGet(t tb, e *env) {
	body := strings.Repeat("r2 body ", 1000)
	p := put(t, e, "dir/obj.txt", body, fullOpts)
	if p.Size != int64(len(body)) || p.Key != "dir/obj.txt" {
		t.Errorf("put returned key %q size %d", p.Key, p.Size)
	}
	ob, got := readAll(t, e, "dir/obj.txt", r2.GetOptions{})
	if got != body {
		t.Fatalf("get returned %d bytes, put %d", len(got), len(body))
	}
	sameRecord(t, "get", ob.Object, fullOpts)
	h, err := e.b.Head(e.ctx, "dir/obj.txt")
	if err != nil {
		t.Fatalf("%v", err)
	}
	sameRecord(t, "head", h, fullOpts)
	if h.Size != int64(len(body)) || h.StorageClass != "InfrequentAccess" || h.Uploaded.IsZero() {
		t.Errorf("head: size %d class %q uploaded %v", h.Size, h.StorageClass, h.Uploaded)
	}
	empty := put(t, e, "empty", "", r2.PutOptions{})
	if _, got := readAll(t, e, "empty", r2.GetOptions{}); got != "" || empty.Size != 0 {
		t.Errorf("empty object read back %q (size %d)", got, empty.Size)
	}
}

func caseFormat(t tb, e *env) {
	put(t, e, "f", "format", fullOpts)
	o := raw(t, e, "f")
	if string(o.Data) != "format" {
		t.Errorf("the store's body is %q", o.Data)
	}
	if len(o.Metadata) != 1 {
		t.Errorf("user metadata %v: want only %s", o.Metadata, r2.MetadataName)
	}
	v, ok := o.Metadata[r2.MetadataName]
	if !ok {
		t.Fatalf("no %s user metadata: %v", r2.MetadataName, o.Metadata)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			t.Fatalf("%s holds byte %#x: not ASCII-escaped", r2.MetadataName, v[i])
		}
	}
	var rec struct {
		Custom map[string]string `json:"custom"`
		HTTP   map[string]any    `json:"http"`
		Class  string            `json:"storageClass"`
		Sums   map[string]string `json:"checksums"`
	}
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		t.Fatalf("%s is not JSON: %v", r2.MetadataName, err)
	}
	if !maps.Equal(rec.Custom, fullOpts.CustomMetadata) {
		t.Errorf("record custom %v", rec.Custom)
	}
	h := fullOpts.HTTPMetadata
	want := map[string]any{"contentType": h.ContentType, "contentLanguage": h.ContentLanguage, "contentDisposition": h.ContentDisposition,
		"contentEncoding": h.ContentEncoding, "cacheControl": h.CacheControl, "cacheExpiry": float64(h.CacheExpiry.UnixMilli())}
	if !maps.Equal(rec.HTTP, want) {
		t.Errorf("record http %v, want %v", rec.HTTP, want)
	}
	if rec.Class != "InfrequentAccess" {
		t.Errorf("record storageClass %q", rec.Class)
	}
	// As celld writes a bare put: "http" always, empty parts and an
	// absent storage class left out, the body's MD5 recorded.
	bare := put(t, e, "bare", "x", r2.PutOptions{})
	if v := raw(t, e, "bare").Metadata[r2.MetadataName]; v != `{"http":{},"checksums":{"md5":"9dd4e461268c8034f5c8564e155c67a6"}}` {
		t.Errorf("a bare object's record is %s", v)
	}
	if h, err := e.b.Head(e.ctx, "bare"); err != nil || h.StorageClass != "Standard" || bare.StorageClass != "Standard" {
		t.Errorf("a bare object's storage class: head %v (%v), put %q", h, err, bare.StorageClass)
	}
}

func caseNoEnvelope(t tb, e *env) {
	if _, err := e.s.Put(e.ctx, layout.R2Key(e.bucket, "plain"), []byte("plain"), store.PutOptions{Metadata: map[string]string{"a": "b", "owner-id": "7"}}); err != nil {
		t.Fatalf("%v", err)
	}
	ob, got := readAll(t, e, "plain", r2.GetOptions{})
	if got != "plain" || !maps.Equal(ob.CustomMetadata, map[string]string{"a": "b", "owner-id": "7"}) {
		t.Errorf("plain object read as %q with custom metadata %v", got, ob.CustomMetadata)
	}
}

func caseEtag(t tb, e *env) {
	first := put(t, e, "e", "one", r2.PutOptions{})
	v1 := raw(t, e, "e").Version
	if first.Version != string(v1) || first.ETag != strings.Trim(string(v1), `"`) {
		t.Errorf("put returned version %q etag %q; the store holds version %q", first.Version, first.ETag, v1)
	}
	second := put(t, e, "e", "two, longer", r2.PutOptions{})
	v2 := raw(t, e, "e").Version
	if second.Version != string(v2) || second.ETag == first.ETag {
		t.Errorf("second put returned version %q (first %q); the store holds %q", second.Version, first.Version, v2)
	}
	h, err := e.b.Head(e.ctx, "e")
	if err != nil {
		t.Fatalf("%v", err)
	}
	if h.Version != string(v2) || h.ETag != second.ETag || h.HTTPETag != `"`+second.ETag+`"` {
		t.Errorf("head version %q etag %q httpEtag %q; the store holds %q", h.Version, h.ETag, h.HTTPETag, v2)
	}
}

func wantPrecondition(t tb, what string, err error) {
	t.Helper()
	var pf *r2.PreconditionFailedError
	if !errors.As(err, &pf) || !errors.Is(err, r2.ErrPreconditionFailed) {
		t.Errorf("%s: got %v, want *r2.PreconditionFailedError", what, err)
	}
}

func caseConditionalPut(t tb, e *env) {
	old := put(t, e, "c", "v1", r2.PutOptions{})
	cur := put(t, e, "c", "v2", r2.PutOptions{})
	check := func(what string, c r2.Conditional) {
		t.Helper()
		_, err := e.b.Put(e.ctx, "c", strings.NewReader("never"), r2.PutOptions{OnlyIf: &c})
		wantPrecondition(t, what, err)
		if _, got := readAll(t, e, "c", r2.GetOptions{}); got != "v2" {
			t.Errorf("%s: the failed put wrote %q", what, got)
		}
	}
	check("etagMatches a stale etag", r2.Conditional{EtagMatches: old.ETag})
	check("etagDoesNotMatch * on an existing object", r2.Conditional{EtagDoesNotMatch: "*"})
	check("etagDoesNotMatch the current etag", r2.Conditional{EtagDoesNotMatch: cur.ETag})
	check("uploadedBefore a time long past", r2.Conditional{UploadedBefore: time.Unix(1, 0)})
	check("uploadedAfter a time far ahead", r2.Conditional{UploadedAfter: time.Now().Add(24 * time.Hour)})
	if _, err := e.b.Put(e.ctx, "missing", strings.NewReader("x"), r2.PutOptions{OnlyIf: &r2.Conditional{EtagMatches: "*"}}); err == nil {
		t.Errorf("etagMatches * wrote a missing object")
	}
	next, err := e.b.Put(e.ctx, "c", strings.NewReader("v3"), r2.PutOptions{OnlyIf: &r2.Conditional{EtagMatches: cur.ETag}})
	if err != nil {
		t.Fatalf("etagMatches the current etag: %v", err)
	}
	if _, got := readAll(t, e, "c", r2.GetOptions{}); got != "v3" || next.ETag == cur.ETag {
		t.Errorf("conditional put: object holds %q, etag %q", got, next.ETag)
	}
	if _, err := e.b.Put(e.ctx, "new", strings.NewReader("n"), r2.PutOptions{OnlyIf: &r2.Conditional{EtagDoesNotMatch: "*"}}); err != nil {
		t.Errorf("create-only put of a missing key: %v", err)
	}
}

func caseConditionalGet(t tb, e *env) {
	old := put(t, e, "g", "one", r2.PutOptions{})
	cur := put(t, e, "g", "two!", fullOpts)
	for what, c := range map[string]r2.Conditional{
		"etagMatches a stale etag":            {EtagMatches: old.ETag},
		"etagDoesNotMatch the current etag":   {EtagDoesNotMatch: cur.ETag},
		"uploadedAfter a time far ahead":      {UploadedAfter: time.Now().Add(24 * time.Hour)},
		"uploadedBefore a time long past":     {UploadedBefore: time.Unix(1, 0)},
		"etagDoesNotMatch * (object present)": {EtagDoesNotMatch: "*"},
	} {
		ob, err := e.b.Get(e.ctx, "g", r2.GetOptions{OnlyIf: &c})
		if err == nil {
			ob.Close()
		}
		wantPrecondition(t, what, err)
		var pf *r2.PreconditionFailedError
		if errors.As(err, &pf) && (pf.Object == nil || pf.Object.ETag != cur.ETag || pf.Object.HTTPMetadata != fullOpts.HTTPMetadata) {
			t.Errorf("%s: the error does not carry the current record: %+v", what, pf.Object)
		}
	}
	if _, got := readAll(t, e, "g", r2.GetOptions{OnlyIf: &r2.Conditional{EtagMatches: cur.ETag}}); got != "two!" {
		t.Errorf("etagMatches the current etag read %q", got)
	}
}

func caseRange(t tb, e *env) {
	body := "0123456789abcdefghij"
	put(t, e, "r", body, r2.PutOptions{})
	for _, c := range []struct {
		rg   r2.Range
		want string
	}{
		{r2.Range{Offset: 3, Length: 4}, "3456"},
		{r2.Range{Offset: 15}, "fghij"},
		{r2.Range{Suffix: 3}, "hij"},
		{r2.Range{Offset: 18, Length: 10}, "ij"},
	} {
		rg := c.rg
		ob, got := readAll(t, e, "r", r2.GetOptions{Range: &rg})
		if got != c.want {
			t.Errorf("range %+v read %q, want %q", c.rg, got, c.want)
		}
		if ob.Size != int64(len(body)) || ob.Range == nil || ob.Range.Length != int64(len(c.want)) {
			t.Errorf("range %+v: size %d range %+v", c.rg, ob.Size, ob.Range)
		}
	}
}

func caseChecksums(t tb, e *env) {
	body := "checked body"
	m := md5.Sum([]byte(body))
	s := sha256.Sum256([]byte(body))
	o, err := e.b.Put(e.ctx, "k", strings.NewReader(body), r2.PutOptions{Checksums: r2.Checksums{MD5: m[:], SHA256: s[:]}})
	if err != nil {
		t.Fatalf("put with the right checksums: %v", err)
	}
	h, err := e.b.Head(e.ctx, "k")
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !bytes.Equal(h.Checksums.MD5, m[:]) || !bytes.Equal(h.Checksums.SHA256, s[:]) || !bytes.Equal(o.Checksums.MD5, m[:]) {
		t.Errorf("checksums read back %+v", h.Checksums)
	}
	plain := put(t, e, "plain", body, r2.PutOptions{})
	if h, err := e.b.Head(e.ctx, "plain"); err != nil || !bytes.Equal(h.Checksums.MD5, m[:]) || !bytes.Equal(plain.Checksums.MD5, m[:]) {
		t.Errorf("a small put without checksums does not record its MD5 (head %v, %v)", h, err)
	}
	bad := sha256.Sum256([]byte("another body"))
	_, err = e.b.Put(e.ctx, "bad", strings.NewReader(body), r2.PutOptions{Checksums: r2.Checksums{SHA256: bad[:]}, Size: int64(len(body))})
	var ce *r2.ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, r2.ErrChecksumMismatch) || ce.Algorithm != "sha256" {
		t.Errorf("put with a wrong sha256: got %v, want *r2.ChecksumError", err)
	}
	if _, err := e.b.Head(e.ctx, "bad"); !errors.Is(err, r2.ErrNotFound) {
		t.Errorf("a put with a wrong checksum left an object (head: %v)", err)
	}
	// A body larger than one request streams: a wrong checksum fails it
	// before the store publishes it, and the record of a right one holds
	// the given checksums only (no computed MD5, as celld's streamed puts).
	big := strings.Repeat("b", r2.SinglePutMax+1)
	bigSum := sha256.Sum256([]byte(big))
	_, err = e.b.Put(e.ctx, "big", strings.NewReader(big), r2.PutOptions{Checksums: r2.Checksums{SHA256: bad[:]}, Size: int64(len(big))})
	if !errors.Is(err, r2.ErrChecksumMismatch) {
		t.Errorf("streamed put with a wrong sha256: got %v", err)
	}
	if _, err := e.b.Head(e.ctx, "big"); !errors.Is(err, r2.ErrNotFound) {
		t.Errorf("a streamed put with a wrong checksum left an object (head: %v)", err)
	}
	if _, err := e.b.Put(e.ctx, "big", strings.NewReader(big), r2.PutOptions{Checksums: r2.Checksums{SHA256: bigSum[:]}}); err != nil {
		t.Fatalf("streamed put with the right sha256: %v", err)
	}
	if h, err := e.b.Head(e.ctx, "big"); err != nil || h.Size != int64(len(big)) || !bytes.Equal(h.Checksums.SHA256, bigSum[:]) || h.Checksums.MD5 != nil {
		t.Errorf("streamed object: %+v (%v)", h, err)
	}
	_, err = e.b.Put(e.ctx, "k", strings.NewReader("replaced"), r2.PutOptions{Checksums: r2.Checksums{MD5: m[:]}})
	if !errors.Is(err, r2.ErrChecksumMismatch) {
		t.Errorf("replacing with a wrong md5: got %v", err)
	}
	if _, got := readAll(t, e, "k", r2.GetOptions{}); got != body {
		t.Errorf("a put with a wrong checksum replaced the object with %q", got)
	}
}

func caseDelete(t tb, e *env) {
	for _, k := range []string{"d1", "d2", "d3"} {
		put(t, e, k, k, r2.PutOptions{})
	}
	if err := e.b.Delete(e.ctx, "d1"); err != nil {
		t.Fatalf("%v", err)
	}
	if err := e.b.Delete(e.ctx, "d2", "d3", "never-there"); err != nil {
		t.Fatalf("%v", err)
	}
	for _, k := range []string{"d1", "d2", "d3"} {
		_, err := e.b.Head(e.ctx, k)
		var nf *r2.NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, r2.ErrNotFound) || nf.Key != k {
			t.Errorf("head of deleted %s: got %v, want *r2.NotFoundError", k, err)
		}
		if _, err := e.b.Get(e.ctx, k, r2.GetOptions{}); !errors.Is(err, r2.ErrNotFound) {
			t.Errorf("get of deleted %s: got %v", k, err)
		}
	}
}

func caseList(t tb, e *env) {
	keys := []string{"a/1", "a/2", "a/b/3", "b", "c/4"}
	for _, k := range keys {
		put(t, e, k, k, r2.PutOptions{CustomMetadata: map[string]string{"k": k}, HTTPMetadata: r2.HTTPMetadata{ContentType: "text/" + strings.ReplaceAll(k, "/", "-")}})
	}
	all, err := e.b.List(e.ctx, r2.ListOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	var got []string
	for _, o := range all.Objects {
		got = append(got, o.Key)
		if o.Size != int64(len(o.Key)) || o.ETag == "" {
			t.Errorf("listed %s: size %d etag %q", o.Key, o.Size, o.ETag)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(keys) || all.Truncated {
		t.Errorf("list: %v (truncated %v), want %v", got, all.Truncated, keys)
	}
	d, err := e.b.List(e.ctx, r2.ListOptions{Prefix: "a/", Delimiter: "/"})
	if err != nil {
		t.Fatalf("%v", err)
	}
	got = nil
	for _, o := range d.Objects {
		got = append(got, o.Key)
	}
	if fmt.Sprint(got) != "[a/1 a/2]" || fmt.Sprint(d.DelimitedPrefixes) != "[a/b/]" {
		t.Errorf("delimited list: objects %v prefixes %v", got, d.DelimitedPrefixes)
	}
	var paged []string
	cursor := ""
	for i := 0; i < 10; i++ {
		p, err := e.b.List(e.ctx, r2.ListOptions{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("%v", err)
		}
		if len(p.Objects) > 2 {
			t.Errorf("page of %d objects with limit 2", len(p.Objects))
		}
		for _, o := range p.Objects {
			paged = append(paged, o.Key)
		}
		if !p.Truncated {
			break
		}
		cursor = p.Cursor
	}
	if fmt.Sprint(paged) != fmt.Sprint(keys) {
		t.Errorf("paged list: %v", paged)
	}
	inc, err := e.b.List(e.ctx, r2.ListOptions{Prefix: "c/", Include: []string{r2.IncludeCustomMetadata, r2.IncludeHTTPMetadata}})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(inc.Objects) != 1 || inc.Objects[0].CustomMetadata["k"] != "c/4" || inc.Objects[0].HTTPMetadata.ContentType != "text/c-4" {
		t.Errorf("list with include: %+v", inc.Objects)
	}
	bare, err := e.b.List(e.ctx, r2.ListOptions{Prefix: "c/"})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(bare.Objects) != 1 || bare.Objects[0].CustomMetadata != nil {
		t.Errorf("list without include carries custom metadata: %+v", bare.Objects)
	}
}

func caseInvalidKeys(t tb, e *env) {
	for what, k := range map[string]string{"empty": "", "1025 bytes": strings.Repeat("k", 1025)} {
		var ke *r2.KeyError
		_, err := e.b.Put(e.ctx, k, strings.NewReader("x"), r2.PutOptions{})
		if !errors.As(err, &ke) || !errors.Is(err, r2.ErrInvalidKey) {
			t.Errorf("put of a %s key: got %v, want *r2.KeyError", what, err)
		}
		if _, err := e.b.Head(e.ctx, k); !errors.Is(err, r2.ErrInvalidKey) {
			t.Errorf("head of a %s key: got %v", what, err)
		}
		if _, err := e.b.Get(e.ctx, k, r2.GetOptions{}); !errors.Is(err, r2.ErrInvalidKey) {
			t.Errorf("get of a %s key: got %v", what, err)
		}
		if err := e.b.Delete(e.ctx, k); !errors.Is(err, r2.ErrInvalidKey) {
			t.Errorf("delete of a %s key: got %v", what, err)
		}
	}
}

func caseMultipart(t tb, e *env) {
	u, err := e.b.CreateMultipartUpload(e.ctx, "big", fullOpts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	parts := []string{strings.Repeat("A", 1000), strings.Repeat("B", 10), "C"}
	var up []r2.UploadedPart
	for i := len(parts) - 1; i >= 0; i-- { // parts may arrive in any order
		p, err := u.UploadPart(e.ctx, i+1, strings.NewReader(parts[i]), int64(len(parts[i])))
		if err != nil {
			t.Fatalf("%v", err)
		}
		up = append(up, p)
	}
	o, err := u.Complete(e.ctx, up)
	if err != nil {
		t.Fatalf("%v", err)
	}
	want := strings.Join(parts, "")
	ob, got := readAll(t, e, "big", r2.GetOptions{})
	if got != want || o.Size != int64(len(want)) {
		t.Errorf("multipart object holds %d bytes (size %d), want %d", len(got), o.Size, len(want))
	}
	sameRecord(t, "multipart", ob.Object, fullOpts)
	if _, ok := raw(t, e, "big").Metadata[r2.MetadataName]; !ok {
		t.Errorf("the multipart object has no celld-r2 record")
	}
	left, err := store.ListAll(e.ctx, e.s, store.ListOptions{Prefix: layout.R2MultipartPrefix(e.bucket)})
	if err != nil || len(left.Objects) != 0 {
		t.Errorf("%d staged objects left after Complete (%v)", len(left.Objects), err)
	}
	aborted, err := e.b.CreateMultipartUpload(e.ctx, "gone", r2.PutOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	p, err := aborted.UploadPart(e.ctx, 1, strings.NewReader("x"), 1)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := aborted.Abort(e.ctx); err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := aborted.Complete(e.ctx, []r2.UploadedPart{p}); !errors.Is(err, r2.ErrNoSuchUpload) {
		t.Errorf("complete after abort: got %v, want r2.ErrNoSuchUpload", err)
	}
}

func caseConditionalRace(t tb, e *env) {
	first := put(t, e, "race", "start", r2.PutOptions{})
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.b.Put(e.ctx, "race", strings.NewReader(fmt.Sprintf("writer %d", i)), r2.PutOptions{OnlyIf: &r2.Conditional{EtagMatches: first.ETag}})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both won a put conditional on one ETag", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, r2.ErrPreconditionFailed):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatalf("no writer won")
	}
	if _, got := readAll(t, e, "race", r2.GetOptions{}); got != fmt.Sprintf("writer %d", won) {
		t.Errorf("the object holds %q; writer %d won", got, won)
	}
}

func caseKeyEncoding(t tb, e *env) {
	keys := map[string]string{
		"café/a b[1]?.txt": "caf%C3%A9/a b%5B1%5D%3F.txt",
		"folder/":          "folder/%",
		"x//y":             "x/%/y",
		"100%":             "100%25",
	}
	for k, stored := range keys {
		put(t, e, k, k, r2.PutOptions{})
		if o := raw(t, e, stored); string(o.Data) != k {
			t.Errorf("the store's %s holds %q, want %q", stored, o.Data, k)
		}
		if _, got := readAll(t, e, k, r2.GetOptions{}); got != k {
			t.Errorf("get %q read %q", k, got)
		}
	}
	l, err := e.b.List(e.ctx, r2.ListOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	var got []string
	for _, o := range l.Objects {
		got = append(got, o.Key)
	}
	// In the store's (encoded) order.
	if want := []string{"100%", "café/a b[1]?.txt", "folder/", "x//y"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %q, want %q", got, want)
	}
	d, err := e.b.List(e.ctx, r2.ListOptions{Prefix: "caf", Delimiter: "/"})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if fmt.Sprint(d.DelimitedPrefixes) != "[café/]" {
		t.Errorf("delimited prefixes %q, want [café/]", d.DelimitedPrefixes)
	}
}
