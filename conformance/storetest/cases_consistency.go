package storetest

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/store"
)

// oddKeys are valid keys that trip adapters which escape, encode or split
// keys carelessly. ':' is in every cell key (<Class>:<id>).
var oddKeys = []string{
	"plain",
	"with space",
	"unicode-é-ü-日本",
	"Class:0123abcd",
	"plus+equals=at@",
	"percent%41%2F",
	"tilde~bang!dollar$",
	"quote'paren(1)",
	"dots..in.middle",
	"deep/a/b/c/d/e/f",
}

func testReadAfterWrite(t tb, e *env) {
	ctx := e.ctx
	for i, rel := range oddKeys {
		k := e.key(rel)
		writer, reader := e.s, e.s2
		if i%2 == 1 {
			writer, reader = e.s2, e.s
		}
		b := e.body("first")
		v := mustPut(t, ctx, writer, k, b, store.PutOptions{})
		o := mustGet(t, ctx, reader, k)
		checkBody(t, fmt.Sprintf("other client reading %q", rel), o, b, v)
		if o.Key != k {
			t.Errorf("get %q returned an object named %q", k, o.Key)
		}
		checkBody(t, fmt.Sprintf("same client reading %q", rel), mustGet(t, ctx, writer, k), b, v)

		b2 := e.body("second")
		v2 := mustPut(t, ctx, reader, k, b2, store.PutOptions{})
		checkBody(t, fmt.Sprintf("reading %q after the other client replaced it", rel), mustGet(t, ctx, writer, k), b2, v2)
	}

	// Empty bodies are objects too.
	k := e.key("empty")
	v := mustPut(t, ctx, e.s, k, nil, store.PutOptions{})
	o := mustGet(t, ctx, e.s2, k)
	checkBody(t, "reading an empty object", o, nil, v)

	for _, c := range []store.Store{e.s, e.s2} {
		if _, err := c.Get(ctx, e.key("never-written")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get of a key never written: %v, want ErrNotFound", err)
		}
	}
}

func testListAfterWrite(t tb, e *env) {
	ctx := e.ctx
	want := map[string]store.ObjectInfo{}
	for i := range 5 {
		k := e.key(fmt.Sprintf("k%d", i))
		b := e.body("x")
		want[k] = store.ObjectInfo{Key: k, Size: int64(len(b)), Version: mustPut(t, ctx, e.s, k, b, store.PutOptions{})}
	}
	check := func(when string, c store.Store) {
		t.Helper()
		l := listChecked(t, ctx, c, store.ListOptions{Prefix: e.prefix})
		got := map[string]bool{}
		for _, o := range l.objects {
			got[o.Key] = true
			w, ok := want[o.Key]
			switch {
			case !ok:
				t.Errorf("%s: listed %q, which should not exist", when, o.Key)
			case o.Size != w.Size || o.Version != w.Version:
				t.Errorf("%s: %q listed with size %d version %q, want size %d version %q", when, o.Key, o.Size, o.Version, w.Size, w.Version)
			}
		}
		for k := range want {
			if !got[k] {
				t.Errorf("%s: %q missing from the listing", when, k)
			}
		}
	}
	check("after creating five keys, the other client's listing", e.s2)
	check("after creating five keys, the same client's listing", e.s)

	k := e.key("k2")
	b := e.body("longer replacement body")
	want[k] = store.ObjectInfo{Key: k, Size: int64(len(b)), Version: mustPut(t, ctx, e.s2, k, b, store.PutOptions{})}
	check("after a replacement", e.s)

	if err := e.s.Delete(ctx, e.key("k3")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	delete(want, e.key("k3"))
	check("after a delete", e.s2)
	kNew := e.key("k9")
	b = e.body("late")
	want[kNew] = store.ObjectInfo{Key: kNew, Size: int64(len(b)), Version: mustPut(t, ctx, e.s2, kNew, b, store.PutOptions{})}
	check("after a late create", e.s)
}

func testDelete(t tb, e *env) {
	ctx := e.ctx
	for _, c := range []store.Store{e.s, e.s2} {
		for range 2 {
			if err := c.Delete(ctx, e.key("never-existed")); err != nil {
				t.Errorf("deleting a missing key: %v, want success", err)
			}
		}
	}
	// "d/gone-kept" has the deleted key as a prefix: a delete removes one
	// key, never the keys it begins.
	gone, stays, longer := e.key("d/gone"), e.key("d/stays"), e.key("d/gone-kept")
	mustPut(t, ctx, e.s, gone, e.body("gone"), store.PutOptions{})
	bStays := e.body("stays")
	vStays := mustPut(t, ctx, e.s, stays, bStays, store.PutOptions{})
	bLonger := e.body("longer")
	vLonger := mustPut(t, ctx, e.s, longer, bLonger, store.PutOptions{})
	if err := e.s2.Delete(ctx, gone); err != nil {
		t.Fatalf("delete %s: %v", gone, err)
	}
	for _, c := range []store.Store{e.s, e.s2} {
		if _, err := c.Get(ctx, gone); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get of a deleted key: %v, want ErrNotFound", err)
		}
		l := listChecked(t, ctx, c, store.ListOptions{Prefix: e.key("d/")})
		sameStrings(t, "listing after the delete", l.keys(), []string{longer, stays})
	}
	checkBody(t, "the deleted key's neighbour", mustGet(t, ctx, e.s, stays), bStays, vStays)
	checkBody(t, "the key the deleted key is a prefix of", mustGet(t, ctx, e.s, longer), bLonger, vLonger)
	if err := e.s.Delete(ctx, gone); err != nil {
		t.Errorf("deleting a key twice: %v, want success", err)
	}
}
