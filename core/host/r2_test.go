package host

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/r2"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestR2BindingReachesTheBucket: a route registered in Classes reaches the
// bucket bound to its binding name through Setup.R2; what it puts is in
// the host's bucket under r2/<bucket_name>/ in celld's format, and
// Host.R2 returns the same bucket.
func TestR2BindingReachesTheBucket(t *testing.T) {
	mem := memstore.New()
	h, err := New(context.Background(), Config{Driver: noDriver{}, DataDir: t.TempDir(), Bucket: mem,
		R2: map[string]string{"IMAGES": "images"},
		Classes: func(s *Setup) error {
			images, err := s.R2("IMAGES")
			if err != nil {
				return err
			}
			s.Mux.HandleFunc("PUT /img/{key}", func(w http.ResponseWriter, r *http.Request) {
				o, err := images.Put(r.Context(), r.PathValue("key"), r.Body, r2.PutOptions{
					HTTPMetadata: r2.HTTPMetadata{ContentType: r.Header.Get("Content-Type")}})
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				io.WriteString(w, o.ETag)
			})
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	req := httptest.NewRequest("PUT", "/img/cat.png", strings.NewReader("png bytes"))
	req.Header.Set("Content-Type", "image/png")
	rec := httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("put answered %d %s", rec.Code, rec.Body)
	}
	raw, err := mem.Get(context.Background(), "r2/images/cat.png")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw.Data) != "png bytes" || raw.Headers.ContentType != "image/png" || raw.Metadata[r2.MetadataName] == "" {
		t.Fatalf("stored %q headers %+v metadata %v", raw.Data, raw.Headers, raw.Metadata)
	}
	b, err := h.R2("IMAGES")
	if err != nil || b.Name() != "images" {
		t.Fatalf("Host.R2: %v, %v", b, err)
	}
	o, err := b.Head(context.Background(), "cat.png")
	if err != nil || o.ETag != rec.Body.String() || o.HTTPMetadata.ContentType != "image/png" {
		t.Fatalf("head through Host.R2: %+v, %v (route answered etag %s)", o, err, rec.Body)
	}
	_, err = h.R2("VIDEOS")
	var be *BindingError
	if !errors.Is(err, ErrNoBinding) || !errors.As(err, &be) || be.Name != "VIDEOS" || len(be.Declared) != 1 {
		t.Fatalf("undeclared binding: %v", err)
	}
}

// TestR2ConfigRefused: bindings without a bucket, or naming a bucket that
// cannot be one key segment, are refused with ErrConfig.
func TestR2ConfigRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Driver: noDriver{}, DataDir: t.TempDir(), R2: map[string]string{"IMAGES": "images"}}, "Config.R2 needs Config.Bucket"},
		{Config{Driver: noDriver{}, DataDir: t.TempDir(), Bucket: memstore.New(), R2: map[string]string{"IMAGES": "a/b"}}, "R2 binding IMAGES"},
		{Config{Driver: noDriver{}, DataDir: t.TempDir(), Bucket: memstore.New(), R2: map[string]string{"": "images"}}, "empty binding name"},
	} {
		_, err := New(context.Background(), c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want ErrConfig saying %q", err, c.want)
		}
	}
}
