package storetest

import (
	"errors"
	"maps"

	"github.com/cellb/cellb/core/store"
)

func testMetadata(t tb, e *env) {
	ctx, k := e.ctx, e.key("md")
	md := map[string]string{
		"a":                    "1",
		"cellb-txid":           "0000000000000042",
		"litestream-timestamp": "2024-05-06T07:08:09.123Z",
		"x-with-dashes":        "value with spaces, punctuation ~!@#$%^&*()_+={}[]|:;'<>,.?/",
	}
	b := e.body("with metadata")
	v := mustPut(t, ctx, e.s, k, b, store.PutOptions{Metadata: md})
	for _, c := range []store.Store{e.s, e.s2} {
		o := mustGet(t, ctx, c, k)
		checkBody(t, "object with metadata", o, b, v)
		if !sameMetadata(o.Metadata, md) {
			t.Errorf("metadata read back as %q, want %q", o.Metadata, md)
		}
	}

	// An overwrite replaces the metadata; it does not merge.
	b2 := e.body("without metadata")
	v2 := mustPut(t, ctx, e.s2, k, b2, store.PutOptions{Condition: store.IfVersion(v)})
	o := mustGet(t, ctx, e.s, k)
	checkBody(t, "overwritten object", o, b2, v2)
	if len(o.Metadata) != 0 {
		t.Errorf("metadata after an overwrite without metadata: %q, want none", o.Metadata)
	}
	md2 := map[string]string{"b": "2"}
	mustPut(t, ctx, e.s, k, e.body("new metadata"), store.PutOptions{Metadata: md2})
	if o := mustGet(t, ctx, e.s2, k); !sameMetadata(o.Metadata, md2) {
		t.Errorf("metadata after an overwrite: %q, want %q", o.Metadata, md2)
	}

	// Bad metadata is refused and nothing is written.
	bad := e.key("bad-md")
	for _, m := range []map[string]string{
		{"Upper": "x"},
		{"under_score": "x"},
		{"1digit": "x"},
		{"ok": "new\nline"},
		{"ok": "non-ascii é"},
	} {
		_, err := e.s.Put(ctx, bad, e.body("bad"), store.PutOptions{Metadata: m})
		if !errors.Is(err, store.ErrInvalidMetadata) {
			t.Errorf("put with metadata %q: %v, want ErrInvalidMetadata", m, err)
		}
	}
	if _, err := e.s.Get(ctx, bad); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after puts with bad metadata, get: %v, want ErrNotFound", err)
	}
}

// sameMetadata treats a missing map and an empty one alike.
func sameMetadata(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return maps.Equal(a, b)
}
