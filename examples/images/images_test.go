package images

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

// serve runs the app in a host, as cellb serve does: the bucket bound to
// Binding over a local-files bucket, the routes on the host's handler.
func serve(t *testing.T) (*httptest.Server, store.Store) {
	bucket, err := fs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), host.Config{Driver: wasm.New(), DataDir: t.TempDir(), Bucket: bucket,
		R2: map[string]string{Binding: BucketName},
		Classes: func(s *host.Setup) error {
			b, err := s.R2(Binding)
			if err != nil {
				return err
			}
			New(b).Routes(s.Mux)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h.Handler())
	t.Cleanup(func() {
		hs.Close()
		h.Close(context.Background())
		store.Close(bucket)
	})
	return hs, bucket
}

func do(t *testing.T, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRoutesStoreCelldObjects: PUT stores the object in celld's R2
// format (body; the HTTP fields as the store's own headers; custom
// metadata, HTTP fields and MD5 in the celld-r2 record); GET, HEAD,
// ranges, conditions, the listing and DELETE answer as documented.
func TestRoutesStoreCelldObjects(t *testing.T) {
	hs, bucket := serve(t)
	u := hs.URL + "/images/cats/tom.png"
	resp, body := do(t, "PUT", u, "png bytes", map[string]string{
		"Content-Type": "image/png", "Cache-Control": "max-age=60", "Content-Disposition": `inline; filename="tom.png"`,
		"X-Meta-Owner": "ren"})
	if resp.StatusCode != 200 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	var put struct {
		Key, ETag string
		Size      int64
	}
	json.Unmarshal([]byte(body), &put)
	if put.Key != "cats/tom.png" || put.Size != 9 || put.ETag == "" {
		t.Fatalf("PUT answered %s", body)
	}

	// The stored object, as celld's format notes describe it.
	raw, err := bucket.Get(context.Background(), "r2/images/cats/tom.png")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw.Data) != "png bytes" {
		t.Errorf("stored body %q", raw.Data)
	}
	wantH := store.ContentHeaders{ContentType: "image/png", CacheControl: "max-age=60", ContentDisposition: `inline; filename="tom.png"`}
	if raw.Headers != wantH {
		t.Errorf("the store's own headers %+v, want %+v", raw.Headers, wantH)
	}
	var rec struct {
		Custom    map[string]string `json:"custom"`
		HTTP      map[string]any    `json:"http"`
		Checksums map[string]string `json:"checksums"`
	}
	if err := json.Unmarshal([]byte(raw.Metadata[r2.MetadataName]), &rec); err != nil {
		t.Fatalf("celld-r2 record %q: %v", raw.Metadata[r2.MetadataName], err)
	}
	sum := md5.Sum([]byte("png bytes"))
	if rec.Custom["owner"] != "ren" || rec.HTTP["contentType"] != "image/png" || rec.Checksums["md5"] != hex.EncodeToString(sum[:]) {
		t.Errorf("record %+v", rec)
	}

	resp, body = do(t, "GET", u, "", nil)
	if resp.StatusCode != 200 || body != "png bytes" || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("Cache-Control") != "max-age=60" || resp.Header.Get("ETag") != `"`+put.ETag+`"` {
		t.Fatalf("GET: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body = do(t, "HEAD", u, "", nil); resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Length") != "9" {
		t.Fatalf("HEAD: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body = do(t, "GET", u, "", map[string]string{"Range": "bytes=4-8"}); resp.StatusCode != 206 || body != "bytes" ||
		resp.Header.Get("Content-Range") != "bytes 4-8/9" {
		t.Fatalf("ranged GET: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ = do(t, "GET", u, "", map[string]string{"If-None-Match": `"` + put.ETag + `"`}); resp.StatusCode != 304 {
		t.Fatalf("GET If-None-Match its ETag: %d", resp.StatusCode)
	}
	if resp, _ = do(t, "PUT", u, "other", map[string]string{"If-None-Match": "*"}); resp.StatusCode != 412 {
		t.Fatalf("create-only PUT over an object: %d", resp.StatusCode)
	}
	if resp, _ = do(t, "PUT", u, "other", map[string]string{"If-Match": `"stale"`}); resp.StatusCode != 412 {
		t.Fatalf("PUT If-Match a stale ETag: %d", resp.StatusCode)
	}
	if resp, body = do(t, "GET", hs.URL+"/images?prefix=cats/", "", nil); resp.StatusCode != 200 || !strings.Contains(body, `"key":"cats/tom.png"`) {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	if resp, _ = do(t, "DELETE", u, "", nil); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if resp, _ = do(t, "GET", u, "", nil); resp.StatusCode != 404 {
		t.Fatalf("GET after DELETE: %d", resp.StatusCode)
	}
	if resp, _ = do(t, "PUT", hs.URL+"/images/"+strings.Repeat("k", 1025), "x", nil); resp.StatusCode != 400 {
		t.Fatalf("PUT of a key over 1024 bytes: %d", resp.StatusCode)
	}
}
