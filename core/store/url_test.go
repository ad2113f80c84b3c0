package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// testMux registers mem (a real opener), a file scheme whose directories
// are in-memory buckets, and "q", a bucket scheme with query parameters.
func testMux(t testing.TB) (*store.URLMux, *memstore.URLOpener) {
	t.Helper()
	m := store.NewURLMux()
	mem := memstore.Register(m)
	m.Register(store.URLScheme{Name: "file", Dir: true, Form: "file:///path/to/dir (or a plain path)", Opener: store.URLOpenerFunc(
		func(_ context.Context, u *store.BucketURL) (store.Store, error) {
			return mem.Bucket("dir:" + u.Dir), nil
		})})
	m.Register(store.URLScheme{Name: "q", Form: "q://bucket[/prefix][?a=A&b=B]", Params: []string{"a", "b"}, Opener: store.URLOpenerFunc(
		func(_ context.Context, u *store.BucketURL) (store.Store, error) { return mem.Bucket(u.Bucket), nil })})
	return m, mem
}

func TestURLMuxParse(t *testing.T) {
	m, _ := testMux(t)
	abs, _ := filepath.Abs("rel/dir")
	for _, tc := range []struct {
		raw, scheme, bucket, dir, prefix string
		query                            map[string]string
	}{
		{raw: "/tmp/b", scheme: "file", dir: "/tmp/b"},
		{raw: "rel/dir", scheme: "file", dir: abs},
		{raw: "file:///tmp/b/", scheme: "file", dir: "/tmp/b"},
		{raw: "FILE:///tmp/b", scheme: "file", dir: "/tmp/b"},
		{raw: "file://localhost/tmp/b", scheme: "file", dir: "/tmp/b"},
		{raw: "file:///tmp/with%20space", scheme: "file", dir: "/tmp/with space"},
		{raw: "mem://b", scheme: "mem", bucket: "b"},
		{raw: "MEM://b/", scheme: "mem", bucket: "b"},
		{raw: "mem://b/team/app-1_x.y/", scheme: "mem", bucket: "b", prefix: "team/app-1_x.y"},
		{raw: "q://b/p?a=1", scheme: "q", bucket: "b", prefix: "p", query: map[string]string{"a": "1"}},
		{raw: "q://b?b=http%3A%2F%2Fh%3A1&a=", scheme: "q", bucket: "b", query: map[string]string{"a": "", "b": "http://h:1"}},
	} {
		u, err := m.Parse(tc.raw)
		if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
			continue
		}
		if u.Scheme != tc.scheme || u.Bucket != tc.bucket || u.Dir != tc.dir || u.Prefix != tc.prefix || u.Raw != tc.raw {
			t.Errorf("%q: scheme %q bucket %q dir %q prefix %q raw %q", tc.raw, u.Scheme, u.Bucket, u.Dir, u.Prefix, u.Raw)
		}
		if len(u.Query) != len(tc.query) {
			t.Errorf("%q: query %v, want %v", tc.raw, u.Query, tc.query)
		}
		for k, v := range tc.query {
			if got, ok := u.Query[k]; !ok || got != v {
				t.Errorf("%q: query %v, want %v", tc.raw, u.Query, tc.query)
			}
		}
	}
}

func TestURLMuxRefusesBadURLs(t *testing.T) {
	m, _ := testMux(t)
	for raw, want := range map[string]string{
		"":                       "empty",
		"  ":                     "empty",
		"nope://x":               `unknown scheme "nope"`,
		"file://host/tmp":        "three slashes",
		"file://":                "no directory",
		"file:///tmp?x=1":        "takes no query parameters",
		"mem://b?x=1":            "takes no query parameters",
		"q://b?c=1":              `unknown parameter "c" for q (known: a, b)`,
		"q://b?a=1&a=2":          `parameter "a" given 2 times`,
		"q://b?a=%zz":            "invalid URL escape",
		"mem://":                 "no bucket name (want mem://name[/prefix])",
		"mem://user:pw@b/p":      "credentials",
		"mem://b/a//b":           "empty path segment",
		"mem://b/sp ace":         "may hold only",
		"mem://b/x#frag":         "unexpected",
		"mem://b%zz/x":           "invalid URL escape",
		"mem://b/../escape":      `".." path segment`,
		"mem://b/ünicode":        "may hold only",
		"mem://[::1/broken-ipv6": "missing ']'",
	} {
		_, err := m.Parse(raw)
		var ue *store.URLError
		switch {
		case err == nil:
			t.Errorf("%q was accepted", raw)
		case !errors.As(err, &ue) || ue.URL != raw:
			t.Errorf("%q: %v is not a *store.URLError for it", raw, err)
		case !strings.HasPrefix(err.Error(), "bad bucket URL "):
			t.Errorf("%q: %q does not say it is a bad bucket URL", raw, err)
		case !strings.Contains(err.Error(), want):
			t.Errorf("%q: %q does not say %q", raw, err, want)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%q: error spans lines: %q", raw, err)
		}
		if _, oerr := m.Open(t.Context(), raw); oerr == nil || oerr.Error() != err.Error() {
			t.Errorf("%q: Open says %v, Parse says %v", raw, oerr, err)
		}
	}
}

func TestURLMuxUnknownSchemeListsKnown(t *testing.T) {
	m, _ := testMux(t)
	_, err := m.Open(t.Context(), "s3://bucket/prefix")
	if !errors.Is(err, store.ErrUnknownScheme) {
		t.Fatalf("%v is not ErrUnknownScheme", err)
	}
	want := `bad bucket URL "s3://bucket/prefix": unknown scheme "s3" (known: file:///path/to/dir (or a plain path), mem://name[/prefix], q://bucket[/prefix][?a=A&b=B])`
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	if _, err := store.NewURLMux().Open(t.Context(), "/some/dir"); err == nil || !strings.Contains(err.Error(), "local directories are not supported here (no file scheme; known: none)") {
		t.Fatalf("a plain path on a mux without file: %v", err)
	}
}

func TestURLMuxRegister(t *testing.T) {
	m, _ := testMux(t)
	if got := strings.Join(m.Schemes(), " "); got != "file mem q" {
		t.Fatalf("Schemes() = %q", got)
	}
	if s, ok := m.Scheme("Q"); !ok || s.Name != "q" || len(s.Params) != 2 {
		t.Fatalf("Scheme(Q) = %+v, %v", s, ok)
	}
	if !m.ValidScheme("MEM") || m.ValidScheme("s3") {
		t.Fatal("ValidScheme is wrong")
	}
	opener := store.URLOpenerFunc(func(context.Context, *store.BucketURL) (store.Store, error) { return memstore.New(), nil })
	for _, tc := range []struct {
		name string
		s    store.URLScheme
		want string
	}{
		{"duplicate", store.URLScheme{Name: "mem", Opener: opener}, `scheme "mem" is already registered`},
		{"duplicate in another case", store.URLScheme{Name: "Mem", Opener: opener}, `scheme "mem" is already registered`},
		{"no opener", store.URLScheme{Name: "x"}, `scheme "x" has no opener`},
		{"empty name", store.URLScheme{Opener: opener}, `invalid scheme name ""`},
		{"bad name", store.URLScheme{Name: "s3://", Opener: opener}, `invalid scheme name "s3://"`},
		{"digit first", store.URLScheme{Name: "3s", Opener: opener}, `invalid scheme name "3s"`},
	} {
		func() {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("%s: panic %v, want %q", tc.name, r, tc.want)
				}
			}()
			m.Register(tc.s)
		}()
	}
	if got := strings.Join(m.Schemes(), " "); got != "file mem q" {
		t.Fatalf("a refused registration changed the mux: %q", got)
	}
	var zero store.URLMux
	zero.Register(store.URLScheme{Name: "z+1.a-b", Opener: opener})
	if s, ok := zero.Scheme("z+1.a-b"); !ok || s.Form != "z+1.a-b://bucket[/prefix]" {
		t.Fatalf("the zero URLMux: %+v %v", s, ok)
	}
}

func TestURLMuxOpenAppliesPrefix(t *testing.T) {
	ctx := t.Context()
	m, mem := testMux(t)
	s, err := m.Open(ctx, "mem://b/team/app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Bucket("b").Get(ctx, "team/app/k"); err != nil {
		t.Fatalf("the key is not under the URL's prefix: %v", err)
	}
	// A second open of the same name is the same bucket.
	whole, err := m.Open(ctx, "MEM://b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whole.Get(ctx, "team/app/k"); err != nil {
		t.Fatalf("mem://b is another bucket: %v", err)
	}
	if _, err := m.Open(ctx, "/tmp/x"); err != nil {
		t.Fatal(err)
	}
	if mem.Bucket("dir:/tmp/x").Len() != 0 {
		t.Fatal("the file opener was not given the directory")
	}
}

func TestURLMuxPassesOpenerErrors(t *testing.T) {
	errNoBucket := errors.New("no such bucket")
	m := store.NewURLMux(func(m *store.URLMux) {
		m.Register(store.URLScheme{Name: "x", Opener: store.URLOpenerFunc(func(context.Context, *store.BucketURL) (store.Store, error) {
			return nil, errNoBucket
		})})
		m.Register(store.URLScheme{Name: "y", Params: []string{"n"}, Opener: store.URLOpenerFunc(func(_ context.Context, u *store.BucketURL) (store.Store, error) {
			return nil, u.Errorf("n %q: want a number", u.Query["n"])
		})})
	})
	if _, err := m.Open(t.Context(), "x://b/p"); err != errNoBucket {
		t.Fatalf("got %v, want the opener's error", err)
	}
	_, err := m.Open(t.Context(), "y://b?n=two")
	var ue *store.URLError
	if !errors.As(err, &ue) || err.Error() != `bad bucket URL "y://b?n=two": n "two": want a number` {
		t.Fatalf("BucketURL.Errorf: %v", err)
	}
}

// FuzzURLMuxParse checks that any input either parses into a URL whose
// prefix is a valid key prefix, or fails with a one-line *URLError, and
// never panics.
func FuzzURLMuxParse(f *testing.F) {
	for _, seed := range []string{
		"/tmp/b", "file:///tmp/b", "file://localhost/x", "mem://b/p/q", "mem://b/../x",
		"mem://[::1]/p", "mem://b/%2e%2e/x", "mem://user@b", "MEM://B/P/", "file:x", "://", "mem://b/a\x00b",
		"q://b?a=1&b=2", "q://b?a=1&a=1",
	} {
		f.Add(seed)
	}
	m, _ := testMux(f)
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := m.Parse(raw)
		if err != nil {
			var ue *store.URLError
			if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %q", raw, err)
			}
			return
		}
		if u.Prefix != "" {
			if verr := store.ValidatePrefix(u.Prefix); verr != nil {
				t.Fatalf("%q: accepted prefix %q: %v", raw, u.Prefix, verr)
			}
		}
		if u.Bucket == "" && u.Dir == "" {
			t.Fatalf("%q: neither a bucket nor a directory", raw)
		}
	})
}

// TestURLMuxConcurrent registers schemes while 20 clients open buckets
// (run with -race to check the locking).
func TestURLMuxConcurrent(t *testing.T) {
	m, mem := testMux(t)
	opener := store.URLOpenerFunc(func(context.Context, *store.BucketURL) (store.Store, error) { return memstore.New(), nil })
	done := make(chan error)
	for i := range 20 {
		go func() {
			m.Register(store.URLScheme{Name: fmt.Sprintf("s%d", i), Opener: opener})
			s, err := m.Open(t.Context(), fmt.Sprintf("mem://b/client-%d", i))
			if err == nil {
				_, err = s.Put(t.Context(), "k", []byte("x"), store.PutOptions{})
			}
			done <- err
		}()
	}
	for range 20 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if n := len(m.Schemes()); n != 23 {
		t.Fatalf("%d schemes, want 23", n)
	}
	if n := mem.Bucket("b").Len(); n != 20 {
		t.Fatalf("%d objects in the shared bucket, want 20", n)
	}
}
