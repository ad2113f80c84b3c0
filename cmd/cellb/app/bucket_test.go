package app

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// memMux is the CLI's mux plus "mem://NAME[/PREFIX]" on the given
// in-memory buckets (a name not in the map fails to open), so two clients
// see one bucket.
func memMux(buckets map[string]*memstore.Store) *store.URLMux {
	m := bucketMux()
	m.Register(store.URLScheme{Name: "mem", Form: "mem://name[/prefix]", Opener: store.URLOpenerFunc(func(_ context.Context, u *store.BucketURL) (store.Store, error) {
		b, ok := buckets[u.Bucket]
		if !ok {
			return nil, errors.New("no such bucket: " + u.Bucket)
		}
		return b, nil
	})})
	return m
}

func TestBucketMuxSchemes(t *testing.T) {
	if got := strings.Join(bucketMux().Schemes(), " "); got != "az azblob file gs s3" {
		t.Fatalf("the CLI opens %q", got)
	}
}

func TestBucketMuxParsesEveryScheme(t *testing.T) {
	m := bucketMux()
	for raw, want := range map[string]string{
		"/tmp/b":                         "file   /tmp/b",
		"file:///tmp/b/":                 "file   /tmp/b",
		"s3://b/team/app?region=auto":    "s3 b team/app ",
		"gs://b/p?endpoint=http://h:1":   "gs b p ",
		"az://c/p?account=a":             "az c p ",
		"azblob://c?endpoint=http://h/a": "azblob c  ",
	} {
		u, err := m.Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if got := u.Scheme + " " + u.Bucket + " " + u.Prefix + " " + u.Dir; got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
	_, err := m.Parse("mem://b")
	want := `bad bucket URL "mem://b": unknown scheme "mem" (known: az://container[/prefix][?account=NAME&endpoint=URL], azblob://container[/prefix][?account=NAME&endpoint=URL], file:///path/to/dir (or a plain path), gs://bucket[/prefix][?endpoint=URL&anonymous=true|false], s3://bucket[/prefix][?endpoint=URL&region=R&path-style=true|false])`
	if !errors.Is(err, store.ErrUnknownScheme) || err.Error() != want {
		t.Fatalf("the CLI ships a mem scheme, or says so unclearly:\n got %v\nwant %s", err, want)
	}
}

func TestOpenBucketAppliesPrefix(t *testing.T) {
	ctx := t.Context()
	base := memstore.New()
	s, err := openBucket(ctx, memMux(map[string]*memstore.Store{"b": base}), "mem://b/team/app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Get(ctx, "team/app/k"); err != nil {
		t.Fatalf("the key is not under the URL's prefix: %v", err)
	}
	if _, err := openBucket(ctx, memMux(nil), "mem://missing"); err == nil || !strings.Contains(err.Error(), "no such bucket") {
		t.Fatalf("opener error: %v", err)
	}
}

// TestOpenMissingDirectory: a bucket directory that is not there is an
// error that says so, not a bare stat error.
func TestOpenMissingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, raw := range []string{missing, "file://" + missing} {
		_, err := openBucket(t.Context(), bucketMux(), raw)
		var me *fsstore.MissingDirError
		if !errors.As(err, &me) || me.Dir != missing || !errors.Is(err, fsstore.ErrNoRoot) ||
			err.Error() != "bucket directory "+missing+" does not exist; create it first (mkdir -p "+missing+") if the path is right" {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine(errors.New("first\nsecond")).Error(); got != "first" {
		t.Fatalf("got %q", got)
	}
}
