package app

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store"
)

// TestServeServesR2Images: serve exposes the R2 example (the README's curl
// lines): an object put on /images/<key> is in the embedded bucket under
// r2/images/<key> in celld's format and reads back with its headers.
func TestServeServesR2Images(t *testing.T) {
	dir := t.TempDir()
	_, hs := startServer(t, serveConfig{Data: dir})
	req, _ := http.NewRequest("PUT", hs.URL+"/images/hello.txt", strings.NewReader("hi there"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"key":"hello.txt"`) {
		t.Fatalf("PUT: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(hs.URL + "/images/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hi there" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("GET: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	bucket, err := fs.Open(filepath.Join(dir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(bucket)
	raw, err := bucket.Get(context.Background(), "r2/images/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw.Data) != "hi there" || raw.Headers.ContentType != "text/plain" ||
		!strings.HasPrefix(raw.Metadata[r2.MetadataName], `{"http":{"contentType":"text/plain"},"checksums":{"md5":`) {
		t.Fatalf("stored %q headers %+v record %q", raw.Data, raw.Headers, raw.Metadata[r2.MetadataName])
	}
}
