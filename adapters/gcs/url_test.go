package gcs_test

import (
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/core/store"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestURLOptions(t *testing.T) {
	mux := store.NewURLMux(gcs.Register)
	if got := mux.Schemes(); len(got) != 1 || got[0] != "gs" {
		t.Fatalf("Register added %v", got)
	}
	options := func(raw string, env map[string]string) (gcs.Options, error) {
		t.Helper()
		u, err := mux.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return gcs.URLOpener{Getenv: envOf(env)}.URLOptions(u)
	}
	got, err := options("gs://b/p", nil)
	if err != nil || got.Bucket != "b" || got.Endpoint != "" || got.Anonymous {
		t.Errorf("plain: %+v %v", got, err)
	}
	got, err = options("gs://b", map[string]string{"CELLB_GCS_ENDPOINT": "http://127.0.0.1:4443/"})
	if err != nil || got.Endpoint != "http://127.0.0.1:4443/storage/v1/" || !got.Anonymous {
		t.Errorf("local endpoint: %+v %v", got, err)
	}
	got, err = options("gs://b?endpoint=https://storage.example&anonymous=false", map[string]string{"CELLB_GCS_ENDPOINT": "http://127.0.0.1:4443/"})
	if err != nil || got.Endpoint != "https://storage.example/storage/v1/" || got.Anonymous {
		t.Errorf("remote endpoint: %+v %v", got, err)
	}
	got, err = options("gs://b?anonymous=true", nil)
	if err != nil || got.Endpoint != "" || !got.Anonymous {
		t.Errorf("anonymous: %+v %v", got, err)
	}
	if _, err := options("gs://b?anonymous=perhaps", nil); err == nil || err.Error() != `bad bucket URL "gs://b?anonymous=perhaps": anonymous "perhaps": want true or false` {
		t.Errorf("a bad anonymous value: %v", err)
	}
	for raw, want := range map[string]string{
		"gs://b?region=x":                `unknown parameter "region" for gs (known: endpoint, anonymous)`,
		"gs://":                          "no bucket name (want " + gcs.URLForm + ")",
		"gs://b/../up":                   `".." path segment`,
		"gs://b?anonymous=1&anonymous=0": `parameter "anonymous" given 2 times`,
	} {
		_, err := mux.Open(t.Context(), raw)
		var ue *store.URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a *store.URLError saying %q", raw, err, want)
		}
	}
}

// TestURLOpensServer opens the emulator through the mux, with the endpoint
// in the URL (anonymous because it is on this machine), and checks that
// keys land under the URL's prefix.
func TestURLOpensServer(t *testing.T) {
	opts := serverOptions(t)
	endpoint := os.Getenv("CELLB_TEST_GCS_ENDPOINT")
	ctx := t.Context()
	mux := store.NewURLMux(gcs.URLOpener{Getenv: envOf(nil)}.Register)
	prefix := "url-test-" + randomHex(6)
	s, err := mux.Open(ctx, "gs://"+opts.Bucket+"/"+prefix+"?endpoint="+url.QueryEscape(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	whole, err := gcs.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	defer whole.Delete(ctx, prefix+"/k")
	if o, err := whole.Get(ctx, prefix+"/k"); err != nil || string(o.Data) != "x" {
		t.Fatalf("the key is not under the URL's prefix: %v", err)
	}
}
