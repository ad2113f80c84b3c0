package storetest

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/store"
)

// testGetData: store.GetData (a store's DataGetter, or Get when it has
// none) reads the body and version a write left, at once and from either
// client, through replacements, for empty and compressed bodies; a missing
// or deleted key is ErrNotFound. The fleet reads own.json this way before
// every acknowledgement, so a stale version here acknowledges a write after
// the cell moved on.
func testGetData(t tb, e *env) {
	ctx := e.ctx
	read := func(what string, s store.Store, k string, want []byte, v store.Version) {
		t.Helper()
		o, err := store.GetData(ctx, s, k)
		if err != nil {
			t.Errorf("%s: GetData: %v", what, err)
			return
		}
		if o == nil {
			t.Errorf("%s: GetData returned neither an object nor an error", what)
			return
		}
		checkBody(t, what, o, want, v)
		if o.Key != k {
			t.Errorf("%s: GetData of %q returned an object named %q", what, k, o.Key)
		}
	}
	for i, rel := range []string{"data", "data/Class:0123abcd/record.json", "data with space"} {
		k := e.key(rel)
		writer, reader := e.s, e.s2
		if i%2 == 1 {
			writer, reader = e.s2, e.s
		}
		for round := range 3 {
			b := e.body(fmt.Sprintf("get-data %d", round))
			v := mustPut(t, ctx, writer, k, b, store.PutOptions{})
			read(fmt.Sprintf("%q after write %d, other client", rel, round+1), reader, k, b, v)
			read(fmt.Sprintf("%q after write %d, same client", rel, round+1), writer, k, b, v)
			if o := mustGet(t, ctx, reader, k); o.Version != v {
				t.Errorf("%q: Get's version %q differs from the write's %q", rel, o.Version, v)
			}
		}
		if err := writer.Delete(ctx, k); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
		if _, err := store.GetData(ctx, reader, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetData of deleted %q: %v, want ErrNotFound", rel, err)
		}
	}
	if _, err := store.GetData(ctx, e.s, e.key("never-written")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetData of a key never written: %v, want ErrNotFound", err)
	}
	k := e.key("data-empty")
	v := mustPut(t, ctx, e.s, k, nil, store.PutOptions{})
	read("an empty object", e.s2, k, nil, v)

	// Compressed bodies come back as stored, as with Get.
	body := gzipped([]byte("get-data of a gzip-encoded body reads the stored bytes"))
	kz := e.key("data-gzip")
	vz := mustPut(t, ctx, e.s, kz, body, store.PutOptions{Headers: store.ContentHeaders{ContentEncoding: "gzip"}})
	read("a gzip-encoded object", e.s2, kz, body, vz)
}
