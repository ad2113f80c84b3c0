//go:build unix

package fs

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store"
)

var keySeeds = []string{
	"cells/Counter:abc/own.json", "a", "a/b", "../x", "/etc/passwd", "a/../b", "a//b", "./a", "a/.", "a\x00b",
	"a\\b", ".cellb-meta/tmp/x", ".Cellb-Meta", ".cellb-metadata/x", "..a/b..", "...", "é/日本", "a\xffb",
	strings.Repeat("x", 255), strings.Repeat("x", 256), "with space/and:colon$", "trailing/",
}

// FuzzKeyPath checks the key-to-path mapping: an accepted key is a clean
// relative path outside the store's directory that round-trips as a real
// file below the root; a refused key is ErrInvalidKey and writes nothing,
// inside the root or beside it.
func FuzzKeyPath(f *testing.F) {
	for _, k := range keySeeds {
		f.Add(k)
	}
	parent := f.TempDir()
	root := filepath.Join(parent, "bucket")
	beside := filepath.Join(parent, "beside")
	for _, d := range []string{root, beside} {
		if err := os.Mkdir(d, 0o777); err != nil {
			f.Fatal(err)
		}
	}
	s, err := Open(root, WithLogger(nil))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })

	f.Fuzz(func(t *testing.T, key string) {
		ctx := t.Context()
		err := store.ValidateKey(key) // the Bucket's check, then the store's own
		if err == nil {
			err = checkKey(key)
		}
		_, perr := s.Put(ctx, key, []byte(key), store.PutOptions{})
		if err != nil {
			if !errors.Is(err, store.ErrInvalidKey) || !errors.Is(perr, store.ErrInvalidKey) {
				t.Fatalf("refused key %q: check %v, put %v; want ErrInvalidKey from both", key, err, perr)
			}
		} else {
			if c, cerr := cleanName(key); cerr != nil || c != key || path.Clean(key) != key || path.IsAbs(key) {
				t.Fatalf("accepted key %q is not a clean relative path (%v)", key, cerr)
			}
			if first, _, _ := strings.Cut(key, "/"); strings.EqualFold(first, metaDir) {
				t.Fatalf("accepted key %q names the store's own directory", key)
			}
			rel, rerr := filepath.Rel(root, filepath.Join(root, filepath.FromSlash(key)))
			if rerr != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				t.Fatalf("accepted key %q maps outside the root (%q)", key, rel)
			}
			switch {
			case perr == nil:
				got, rerr := os.ReadFile(filepath.Join(root, key))
				if rerr != nil || string(got) != key {
					t.Fatalf("put %q: the file at its path holds %q (%v)", key, got, rerr)
				}
				o, gerr := s.Get(ctx, key)
				if gerr != nil || string(o.Data) != key {
					t.Fatalf("get %q after put: %v", key, gerr)
				}
				l, lerr := store.ListAll(ctx, s, store.ListOptions{Prefix: key})
				if lerr != nil || !slices.ContainsFunc(l.Objects, func(o store.ObjectInfo) bool { return o.Key == key }) {
					t.Fatalf("list %q after put: %v %+v", key, lerr, l.Objects)
				}
				if derr := s.Delete(ctx, key); derr != nil {
					t.Fatalf("delete %q: %v", key, derr)
				}
			case errors.Is(perr, ErrKeyConflict), errors.Is(perr, store.ErrInvalidKey):
				// A name the file system itself refuses (too long a path).
			default:
				t.Fatalf("put %q: %v", key, perr)
			}
		}
		if ents, _ := os.ReadDir(beside); len(ents) != 0 {
			t.Fatalf("key %q wrote beside the root", key)
		}
		if ents, _ := os.ReadDir(root); len(ents) > 1 {
			t.Fatalf("key %q left %d entries in the root", key, len(ents))
		}
	})
}

// FuzzToken: any token string decodes or is refused cleanly, and every
// resume point survives the round trip.
func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "1", "1YQ", "garbage", encodeToken("a/b\x00"), encodeToken("cells0")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		from, err := decodeToken(tok)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("decode %q: %v", tok, err)
			}
		} else if tok != "" {
			if again, err := decodeToken(encodeToken(from)); err != nil || again != from {
				t.Fatalf("resume point %q of %q did not round-trip: %q %v", from, tok, again, err)
			}
		}
		if tok != "" {
			if got, err := decodeToken(encodeToken(tok)); err != nil || got != tok {
				t.Fatalf("encode/decode of %q: %q %v", tok, got, err)
			}
		}
	})
}

// FuzzPastPrefix: the bound sorts after every string with the prefix and
// is the first string that does.
func FuzzPastPrefix(f *testing.F) {
	for _, s := range []string{"a/", "cells/", "\xff", "a\xff", "", "é"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, p, tail string) {
		end, ok := pastPrefix(p)
		if !ok {
			if strings.Trim(p, "\xff") != "" {
				t.Fatalf("no bound for %q", p)
			}
			return
		}
		if p+tail >= end {
			t.Fatalf("%q sorts at or after the bound %q of prefix %q", p+tail, end, p)
		}
		if strings.HasPrefix(end, p) {
			t.Fatalf("bound %q of %q itself starts with the prefix", end, p)
		}
	})
}

// FuzzSidecar: any bytes parse or are refused without panicking, and what
// parses re-encodes to the same record.
func FuzzSidecar(f *testing.F) {
	good, _ := encodeSidecar(&sidecar{Format: sidecarFormat, Key: "k",
		Cur:  &record{Version: "V1", File: identity{Ino: 2, Size: 3, Mtime: 4}, Metadata: map[string]string{"a": "b"}},
		Prev: &record{Version: "V0", File: identity{Ino: 9}}})
	for _, s := range [][]byte{good, []byte(`{}`), []byte(`{"format":1,"key":"k","cur":null}`), []byte(`{"format":1,"key":"k","cur":{"version":""}}`), []byte("\x00"), append(good, '{')} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := decodeSidecar(data, "k")
		if err != nil {
			if !errors.Is(err, errBadSidecar) {
				t.Fatalf("decode error %v does not wrap errBadSidecar", err)
			}
			return
		}
		enc, err := encodeSidecar(sc)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeSidecar(enc, "k")
		if err != nil || !reflect.DeepEqual(sc, again) {
			t.Fatalf("re-encoded sidecar %s does not decode to the same record: %v", enc, err)
		}
	})
}

// FuzzAttr: any bytes parse as a record attribute or are refused without
// panicking, and a compact record that parses re-encodes to itself.
func FuzzAttr(f *testing.F) {
	good := encodeAttr("k", &record{Version: "V1", File: identity{Ino: 2, Size: 3, Mtime: -4}})
	for _, s := range [][]byte{good, good[:5], {attrCompactTag}, []byte(`{}`), append(good, 0xff)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeAttr(data, "k")
		if err != nil {
			if !errors.Is(err, errBadSidecar) {
				t.Fatalf("decode error %v does not wrap errBadSidecar", err)
			}
			return
		}
		if len(data) > 0 && data[0] == attrCompactTag {
			again, err := decodeAttr(encodeAttr("k", rec), "k")
			if err != nil || !reflect.DeepEqual(rec, again) {
				t.Fatalf("re-encoded record does not decode to the same record: %v", err)
			}
		}
	})
}
