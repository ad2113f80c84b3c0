package r2

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// Stored forms as celld 0.6.1 writes them (its object-store path rules).
var keyVectors = []struct{ key, stored string }{
	{"cat.png", "cat.png"},
	{"photos/", "photos/%"},
	{"a//b", "a/%/b"},
	{"/lead", "%/lead"},
	{"a b/c", "a b/c"},
	{"café", "caf%C3%A9"},
	{"50%", "50%25"},
	{`x\{}^` + "`" + `[]"<>~#|*?y`, "x%5C%7B%7D%5E%60%5B%5D%22%3C%3E%7E%23%7C%2A%3Fy"},
	{"tab\there\x7f", "tab%09here%7F"},
	{"./..", "%2E/%2E%2E"},
	{"a.b/.c", "a.b/.c"},
}

func TestKeyEncoding(t *testing.T) {
	for _, v := range keyVectors {
		if got := EncodeKey(v.key); got != v.stored {
			t.Errorf("EncodeKey(%q) = %q, want %q", v.key, got, v.stored)
		}
		if got := DecodeKey(v.stored); got != v.key {
			t.Errorf("DecodeKey(%q) = %q, want %q", v.stored, got, v.key)
		}
		if err := store.ValidateKey("r2/b/" + v.stored); err != nil {
			t.Errorf("stored key of %q is not a store key: %v", v.key, err)
		}
	}
	if got := DecodeKey("bad%zzescape%4"); got != "bad%zzescape%4" {
		t.Errorf("a malformed escape decoded to %q", got)
	}
}

// TestCelldEncodedKeysReadBack: objects celld wrote under encoded keys are
// read, listed (with prefixes and delimiters in key space) and written
// under the same stored keys.
func TestCelldEncodedKeysReadBack(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	for _, stored := range []string{"r2/img/caf%C3%A9/a%3F.png", "r2/img/caf%C3%A9/b.png", "r2/img/dir/%", "r2/img/odd%41"} {
		if _, err := s.Put(ctx, stored, []byte(stored), store.PutOptions{Metadata: map[string]string{"celld-r2": celldRecord}}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := New(s, "img")
	ob, err := b.Get(ctx, "café/a?.png", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ob)
	ob.Close()
	if string(body) != "r2/img/caf%C3%A9/a%3F.png" {
		t.Errorf("read %q", body)
	}
	l, err := b.List(ctx, ListOptions{Prefix: "caf", Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.DelimitedPrefixes) != 1 || l.DelimitedPrefixes[0] != "café/" {
		t.Errorf("delimited prefixes %q", l.DelimitedPrefixes)
	}
	l, err = b.List(ctx, ListOptions{Include: []string{IncludeCustomMetadata}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range l.Objects {
		keys = append(keys, o.Key)
		if o.CustomMetadata["owner"] != "rené" {
			t.Errorf("%q listed without its record", o.Key)
		}
	}
	// "odd%41" is not canonical (another tool's): it lists as "oddA" and
	// its record is still read from the stored key.
	if want := []string{"café/a?.png", "café/b.png", "dir/", "oddA"}; len(keys) != 4 || keys[0] != want[0] || keys[1] != want[1] || keys[2] != want[2] || keys[3] != want[3] {
		t.Errorf("listed %q, want %q", keys, want)
	}
	if _, err := b.Put(ctx, "photos/", nil, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "r2/img/photos/%"); err != nil {
		t.Errorf("the folder marker photos/ is not stored as celld stores it: %v", err)
	}
}

// TestSmallPutAllocatesLittle: a small body is read into a buffer of its
// own size, not one of SinglePutMax.
func TestSmallPutAllocatesLittle(t *testing.T) {
	ctx := t.Context()
	b, _ := New(memstore.New(), "b")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := b.Put(ctx, "k", strings.NewReader("small"), PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > SinglePutMax {
		t.Errorf("10 puts of 5 bytes allocated %d bytes", got)
	}
}
