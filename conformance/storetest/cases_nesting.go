package storetest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cellb/cellb/core/store"
)

// testObjectAndPrefix checks keys that nest inside other keys ("x" and
// "x/y"). Cloud buckets hold both. A store that lays keys out as files may
// instead refuse the second with ErrInvalidKey (a file and a directory
// cannot share a name): the suite accepts that, since CellB's and celld's
// key layouts never nest an object inside another, but it must be a clean
// refusal that changes nothing.
func testObjectAndPrefix(t tb, e *env) {
	ctx := e.ctx
	x, xy := e.key("x"), e.key("x/y")
	bx, bxy := e.body("x"), e.body("x/y")
	vx := mustPut(t, ctx, e.s, x, bx, store.PutOptions{})
	vxy, err := e.s.Put(ctx, xy, bxy, store.PutOptions{})
	switch {
	case errors.Is(err, store.ErrInvalidKey):
		t.Logf("the store refuses %q below the object %q: it cannot hold nested keys", xy, x)
		checkRefusedNesting(t, e, x, bx, vx, xy)
		if err := e.s.Delete(ctx, x); err != nil {
			t.Fatalf("delete %s: %v", x, err)
		}
		// The other way round: the deeper key first.
		vxy := mustPut(t, ctx, e.s, xy, bxy, store.PutOptions{})
		bx2 := e.body("x over x/y")
		_, err := e.s.Put(ctx, x, bx2, store.PutOptions{})
		switch {
		case errors.Is(err, store.ErrInvalidKey):
			checkRefusedNesting(t, e, xy, bxy, vxy, x)
		case err == nil:
			t.Errorf("the store refuses %q below %q but accepts %q above %q: nesting must be refused both ways or allowed both ways", xy, x, x, xy)
		default:
			t.Fatalf("put %s over %s: %v, want success or ErrInvalidKey", x, xy, err)
		}
		return
	case err != nil:
		t.Fatalf("put %s below the object %s: %v, want success (or ErrInvalidKey from a store that cannot nest keys)", xy, x, err)
	case vxy == "":
		t.Fatalf("put %s returned an empty version", xy)
	}

	checkBody(t, "the shorter key", mustGet(t, ctx, e.s2, x), bx, vx)
	checkBody(t, "the longer key", mustGet(t, ctx, e.s2, xy), bxy, vxy)
	l := listChecked(t, ctx, e.s, store.ListOptions{Prefix: e.prefix})
	sameStrings(t, "flat listing", l.keys(), []string{x, xy})
	l = listChecked(t, ctx, e.s, store.ListOptions{Prefix: e.prefix, Delimiter: "/"})
	sameStrings(t, "delimiter listing: objects", l.keys(), []string{x})
	sameStrings(t, "delimiter listing: common prefixes", l.prefixes, []string{x + "/"})

	if err := e.s.Delete(ctx, x); err != nil {
		t.Fatalf("delete %s: %v", x, err)
	}
	checkBody(t, "the longer key after deleting the shorter", mustGet(t, ctx, e.s, xy), bxy, vxy)
	bx2 := e.body("x again")
	vx2 := mustPut(t, ctx, e.s2, x, bx2, store.PutOptions{Condition: store.IfAbsent})
	checkBody(t, "the shorter key written after the longer", mustGet(t, ctx, e.s, x), bx2, vx2)
}

// checkRefusedNesting checks that a refused nested write changed nothing:
// kept still holds its body, refused does not exist, and the listing shows
// only kept.
func checkRefusedNesting(t tb, e *env, kept string, body []byte, v store.Version, refused string) {
	t.Helper()
	checkBody(t, fmt.Sprintf("%s after the refused write of %s", kept, refused), mustGet(t, e.ctx, e.s2, kept), body, v)
	if _, err := e.s2.Get(e.ctx, refused); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get of the refused key %s: %v, want ErrNotFound", refused, err)
	}
	l := listChecked(t, e.ctx, e.s, store.ListOptions{Prefix: e.prefix})
	sameStrings(t, "listing after the refused write", l.keys(), []string{kept})
}

// testConcurrentSiblings writes, replaces and deletes many keys of one
// directory at once: stores that keep directories (local files) must not
// trip over each other creating and removing them.
func testConcurrentSiblings(t tb, e *env) {
	const n = 96
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.key(fmt.Sprintf("dir/sub/k%03d", i))
	}
	errs := make([]error, n)
	run := func(what string, f func(i int) error) {
		t.Helper()
		clear(errs)
		parallel(n, 32, func(i int) { errs[i] = f(i) })
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s %s, with its siblings at the same time: %v", what, keys[i], err)
			}
		}
	}
	run("create", func(i int) error {
		_, err := e.client(i).Put(e.ctx, keys[i], e.body("create"), store.PutOptions{Condition: store.IfAbsent})
		return err
	})
	// Half are deleted while the other half are replaced.
	final := map[string][]byte{}
	var mu sync.Mutex
	run("delete or replace", func(i int) error {
		if i%2 == 0 {
			return e.client(i).Delete(e.ctx, keys[i])
		}
		b := e.body("replace")
		_, err := e.client(i).Put(e.ctx, keys[i], b, store.PutOptions{})
		if err == nil {
			mu.Lock()
			final[keys[i]] = b
			mu.Unlock()
		}
		return err
	})
	var want []string
	for _, k := range keys {
		if b, ok := final[k]; ok {
			want = append(want, k)
			checkBody(t, "a replaced sibling", mustGet(t, e.ctx, e.s, k), b, "")
		}
	}
	sameStrings(t, "listing after deleting half", listKeys(t, e.ctx, e.s2, e.key("dir/")), want)
	run("delete", func(i int) error { return e.client(i).Delete(e.ctx, keys[i]) })
	sameStrings(t, "listing after deleting all", listKeys(t, e.ctx, e.s, e.key("dir/")), nil)
	// The emptied directory can be used again at once.
	run("recreate", func(i int) error {
		_, err := e.client(i).Put(e.ctx, keys[i], e.body("again"), store.PutOptions{Condition: store.IfAbsent})
		return err
	})
	sameStrings(t, "listing after recreating", listKeys(t, e.ctx, e.s2, e.key("dir/")), keys)
}
