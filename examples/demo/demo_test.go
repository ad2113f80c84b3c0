package demo

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/drivers/wasm"
)

func newHost(t *testing.T, r2 map[string]string) (*host.Host, *Apps, error) {
	t.Helper()
	bucket, err := fs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var apps *Apps
	h, err := host.New(context.Background(), host.Config{Driver: wasm.New(), DataDir: t.TempDir(), Bucket: bucket, R2: r2,
		Classes: func(su *host.Setup) (err error) {
			apps, err = Register(su)
			return err
		}})
	if err == nil {
		t.Cleanup(func() { h.Close(context.Background()) })
	}
	return h, apps, err
}

// TestRegisterServesEveryApp: the counter, a chat room, the bank and the
// images app all answer on the host's handler.
func TestRegisterServesEveryApp(t *testing.T) {
	h, apps, err := newHost(t, R2Bindings())
	if err != nil {
		t.Fatal(err)
	}
	if apps.Counter == nil || apps.Rooms == nil || apps.Bank == nil || apps.Images == nil {
		t.Fatalf("Register returned %+v", apps)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/counter/a", ""},
		{"POST", "/room/lobby", `{"user":"u","text":"hi"}`},
		{"POST", "/bank/alice/deposit", `{"id":"d1","amount":10}`},
		{"POST", "/bank/transfer", `{"id":"t1","from":"alice","to":"bob","amount":4}`},
		{"GET", "/bank/bob", ""},
		{"PUT", "/images/cat.png", "png"},
		{"GET", "/images/cat.png", ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("%s %s: %s", c.method, c.path, resp.Status)
		}
	}
}

// TestRegisterNeedsTheBinding: without R2Bindings in Config.R2 the images
// app has no bucket and Register says which binding is missing.
func TestRegisterNeedsTheBinding(t *testing.T) {
	_, _, err := newHost(t, nil)
	var be *host.BindingError
	if !errors.As(err, &be) {
		t.Fatalf("New without the R2 bindings: %v, want a *host.BindingError", err)
	}
	if R2Bindings()["IMAGES"] != "images" {
		t.Fatalf("R2Bindings() = %v", R2Bindings())
	}
}
