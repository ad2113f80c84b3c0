package s3_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/store"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestURLOptions(t *testing.T) {
	mux := store.NewURLMux(s3.Register)
	if got := mux.Schemes(); len(got) != 1 || got[0] != "s3" {
		t.Fatalf("Register added %v", got)
	}
	creds := aws.AnonymousCredentials{}
	cases := []struct {
		url  string
		env  map[string]string
		base s3.Options
		want s3.Options
	}{
		{url: "s3://b/p", want: s3.Options{Bucket: "b"}},
		{url: "S3://b", env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}, want: s3.Options{Bucket: "b", Endpoint: "http://127.0.0.1:9000", UsePathStyle: true}},
		{url: "s3://b", env: map[string]string{"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://s3"}, want: s3.Options{Bucket: "b", Endpoint: "http://s3", UsePathStyle: true}},
		{url: "s3://b?endpoint=https://x.r2.example&path-style=false&region=auto", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://s3", "CELLB_S3_PATH_STYLE": "true"}, want: s3.Options{Bucket: "b", Endpoint: "https://x.r2.example", Region: "auto"}},
		{url: "s3://b", env: map[string]string{"CELLB_S3_PATH_STYLE": "true"}, want: s3.Options{Bucket: "b", UsePathStyle: true}},
		{url: "s3://b?region=eu-west-1", base: s3.Options{Bucket: "ignored", Region: "us-east-1", Credentials: creds, PartSize: 6 << 20}, want: s3.Options{Bucket: "b", Region: "eu-west-1", Credentials: creds, PartSize: 6 << 20}},
	}
	for _, c := range cases {
		u, err := mux.Parse(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		got, err := s3.URLOpener{Options: c.base, Getenv: envOf(c.env)}.URLOptions(u)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if got.Bucket != c.want.Bucket || got.Endpoint != c.want.Endpoint || got.Region != c.want.Region || got.UsePathStyle != c.want.UsePathStyle ||
			got.Credentials != c.want.Credentials || got.PartSize != c.want.PartSize {
			t.Errorf("%s with %v: got %+v, want %+v", c.url, c.env, got, c.want)
		}
	}
	for raw, want := range map[string]string{
		"s3://b?path-style=maybe":   `bad bucket URL "s3://b?path-style=maybe": path-style "maybe": want true or false`,
		"s3://b?endpiont=x":         `unknown parameter "endpiont" for s3 (known: endpoint, region, path-style)`,
		"s3://b?region=a&region=b":  `parameter "region" given 2 times`,
		"s3:///prefix?region=a":     "no bucket name (want " + s3.URLForm + ")",
		"s3://key:secret@b/prefix":  "credentials do not belong in the URL",
		"s3://b/Prefix With Spaces": "may hold only",
	} {
		_, err := mux.Open(t.Context(), raw)
		var ue *store.URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a *store.URLError saying %q", raw, err, want)
		}
	}
	u, _ := mux.Parse("s3://b")
	if _, err := (s3.URLOpener{Getenv: envOf(map[string]string{"CELLB_S3_PATH_STYLE": "yes please"})}).URLOptions(u); err == nil ||
		err.Error() != `s3: CELLB_S3_PATH_STYLE="yes please": want true or false` {
		t.Errorf("a bad CELLB_S3_PATH_STYLE: %v", err)
	}
}

// TestURLOpensServer opens the test server through the mux, with the
// endpoint and region in the URL, and checks that keys land under the
// URL's prefix.
func TestURLOpensServer(t *testing.T) {
	opts := serverOptions(t)
	ctx := t.Context()
	mux := store.NewURLMux(s3.URLOpener{Options: s3.Options{Credentials: opts.Credentials}, Getenv: envOf(nil)}.Register)
	prefix := "url-test-" + randomSuffix()
	raw := "s3://" + opts.Bucket + "/" + prefix + "?endpoint=" + url.QueryEscape(opts.Endpoint) + "&region=" + url.QueryEscape(opts.Region)
	s, err := mux.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	whole, err := s3.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	defer whole.Delete(ctx, prefix+"/k")
	if o, err := whole.Get(ctx, prefix+"/k"); err != nil || string(o.Data) != "x" {
		t.Fatalf("the key is not under the URL's prefix: %v", err)
	}
}

func randomSuffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
