package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// memSchemes is the real table plus "mem://NAME[/PREFIX]": one in-memory
// bucket per name, shared by every open, so two clients see one bucket.
func memSchemes(buckets map[string]*memstore.Store) map[string]bucketScheme {
	schemes := bucketSchemes()
	schemes["mem"] = bucketScheme{hasPrefix: true, form: "mem://name[/prefix]", open: func(_ context.Context, loc bucketLocation) (store.Store, error) {
		b, ok := buckets[loc.Bucket]
		if !ok {
			return nil, errors.New("no such bucket: " + loc.Bucket)
		}
		return b, nil
	}}
	return schemes
}

func TestParseBucketURL(t *testing.T) {
	schemes := memSchemes(nil)
	abs, _ := filepath.Abs("rel/dir")
	for _, tc := range []struct {
		raw, scheme, bucket, dir, prefix string
	}{
		{raw: "/tmp/b", scheme: "file", dir: "/tmp/b"},
		{raw: "rel/dir", scheme: "file", dir: abs},
		{raw: "file:///tmp/b/", scheme: "file", dir: "/tmp/b"},
		{raw: "file://localhost/tmp/b", scheme: "file", dir: "/tmp/b"},
		{raw: "file:///tmp/with%20space", scheme: "file", dir: "/tmp/with space"},
		{raw: "mem://b", scheme: "mem", bucket: "b"},
		{raw: "MEM://b/", scheme: "mem", bucket: "b"},
		{raw: "mem://b/team/app-1_x.y/", scheme: "mem", bucket: "b", prefix: "team/app-1_x.y"},
	} {
		s, loc, err := parseBucketURL(tc.raw, schemes)
		if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
			continue
		}
		if s.form != schemes[tc.scheme].form || loc.Bucket != tc.bucket || loc.Dir != tc.dir || loc.Prefix != tc.prefix {
			t.Errorf("%q: scheme %q bucket %q dir %q prefix %q", tc.raw, s.form, loc.Bucket, loc.Dir, loc.Prefix)
		}
	}
}

func TestBadBucketURLs(t *testing.T) {
	schemes := memSchemes(nil)
	for raw, want := range map[string]string{
		"":                       "empty",
		"  ":                     "empty",
		"nope://x":               `unknown scheme "nope"`,
		"file://host/tmp":        "three slashes",
		"file://":                "no directory",
		"file:///tmp?x=1":        "no query",
		"mem://":                 "no bucket name",
		"mem://user:pw@b/p":      "credentials",
		"mem://b/a//b":           "empty path segment",
		"mem://b/sp ace":         "may hold only",
		"mem://b/x#frag":         "unexpected",
		"mem://b%zz/x":           "invalid URL escape",
		"mem://b/../escape":      `".." path segment`,
		"mem://b/ünicode":        "may hold only",
		"mem://[::1/broken-ipv6": "missing ']'",
	} {
		_, _, err := parseBucketURL(raw, schemes)
		switch {
		case err == nil:
			t.Errorf("%q was accepted", raw)
		case !errors.Is(err, errBucketURL):
			t.Errorf("%q: %v is not errBucketURL", raw, err)
		case !strings.Contains(err.Error(), want):
			t.Errorf("%q: %q does not say %q", raw, err, want)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%q: error spans lines: %q", raw, err)
		}
	}
}

func TestOpenBucketAppliesPrefix(t *testing.T) {
	ctx := t.Context()
	base := memstore.New()
	s, err := openBucket(ctx, "mem://b/team/app", memSchemes(map[string]*memstore.Store{"b": base}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Get(ctx, "team/app/k"); err != nil {
		t.Fatalf("the key is not under the URL's prefix: %v", err)
	}
	if _, err := openBucket(ctx, "mem://missing", memSchemes(nil)); err == nil || !strings.Contains(err.Error(), "no such bucket") {
		t.Fatalf("opener error: %v", err)
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine(errors.New("first\nsecond")).Error(); got != "first" {
		t.Fatalf("got %q", got)
	}
}

// FuzzParseBucketURL checks that any input either parses into a location
// whose prefix is a valid key prefix, or fails with a one-line
// errBucketURL, and never panics.
func FuzzParseBucketURL(f *testing.F) {
	for _, seed := range []string{
		"/tmp/b", "file:///tmp/b", "file://localhost/x", "mem://b/p/q", "mem://b/../x",
		"mem://[::1]/p", "mem://b/%2e%2e/x", "mem://user@b", "MEM://B/P/", "file:x", "://", "mem://b/a\x00b",
	} {
		f.Add(seed)
	}
	schemes := memSchemes(nil)
	f.Fuzz(func(t *testing.T, raw string) {
		_, loc, err := parseBucketURL(raw, schemes)
		if err != nil {
			if !errors.Is(err, errBucketURL) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %q", raw, err)
			}
			return
		}
		if loc.Prefix != "" {
			if verr := store.ValidatePrefix(loc.Prefix); verr != nil {
				t.Fatalf("%q: accepted prefix %q: %v", raw, loc.Prefix, verr)
			}
		}
		if loc.Bucket == "" && loc.Dir == "" {
			t.Fatalf("%q: neither a bucket nor a directory", raw)
		}
	})
}
