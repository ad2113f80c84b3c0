package storetest

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/store"
)

func testProbe(t tb, e *env) {
	s, err := store.WithPrefix(e.s, e.prefix)
	if err != nil {
		t.Fatalf("prefixing the probe: %v", err)
	}
	res, err := store.Prober{Tag: "storetest"}.Run(e.ctx, s)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, st := range res.Steps {
		t.Logf("%s: %v", st.Step, st.Elapsed)
	}
}

// expectRejected fails the case unless err is a clean precondition
// rejection.
func expectRejected(t tb, what string, err error, ignored string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s was applied: %s", what, ignored)
	case !errors.Is(err, store.ErrPreconditionFailed):
		t.Errorf("%s: got %v, want ErrPreconditionFailed", what, err)
	}
}

func testCreateOnly(t tb, e *env) {
	ctx, k := e.ctx, e.key("once")
	first := e.body("first")
	v := mustPut(t, ctx, e.s, k, first, store.PutOptions{Condition: store.IfAbsent})

	_, err := e.s.Put(ctx, k, e.body("second"), store.PutOptions{Condition: store.IfAbsent})
	expectRejected(t, "a second create-only write", err, "the store ignores If-None-Match: *")
	_, err = e.s2.Put(ctx, k, e.body("other client"), store.PutOptions{Condition: store.IfAbsent})
	expectRejected(t, "a create-only write from the second client", err, "the store ignores If-None-Match: *")
	_, err = e.s.Put(ctx, k, first, store.PutOptions{Condition: store.IfAbsent})
	expectRejected(t, "a create-only write of the same body", err, "create-only must not depend on the body")
	checkBody(t, "after the rejected writes", mustGet(t, ctx, e.s2, k), first, v)

	// Create-only applies again once the key is deleted.
	if err := e.s.Delete(ctx, k); err != nil {
		t.Fatalf("delete %s: %v", k, err)
	}
	again := e.body("after delete")
	v2 := mustPut(t, ctx, e.s2, k, again, store.PutOptions{Condition: store.IfAbsent})
	checkBody(t, "create-only after a delete", mustGet(t, ctx, e.s, k), again, v2)
}

// testCompareAndSwap keeps every body distinct: on S3 a version is the MD5
// of the body, so a stale version still matches when the new body equals
// the current one. CellB's records always carry something unique (a TXID,
// an epoch, an expiry), and so do the suite's bodies.
func testCompareAndSwap(t tb, e *env) {
	ctx, k := e.ctx, e.key("cas")
	v1 := mustPut(t, ctx, e.s, k, e.body("v1"), store.PutOptions{})
	b2 := e.body("v2")
	v2 := mustPut(t, ctx, e.s, k, b2, store.PutOptions{Condition: store.IfVersion(v1)})
	if v2 == v1 {
		t.Errorf("a replacement with a different body kept version %q", v1)
	}
	_, err := e.s.Put(ctx, k, e.body("stale"), store.PutOptions{Condition: store.IfVersion(v1)})
	expectRejected(t, "a write conditioned on a stale version", err, "the store ignores If-Match")
	checkBody(t, "after the stale write", mustGet(t, ctx, e.s, k), b2, v2)

	// A version one client got is good on the other.
	b3 := e.body("v3 from the second client")
	v3 := mustPut(t, ctx, e.s2, k, b3, store.PutOptions{Condition: store.IfVersion(v2)})
	_, err = e.s.Put(ctx, k, e.body("stale again"), store.PutOptions{Condition: store.IfVersion(v2)})
	expectRejected(t, "a write conditioned on a version the other client replaced", err, "the store ignores If-Match")
	checkBody(t, "after the cross-client swap", mustGet(t, ctx, e.s, k), b3, v3)

	// A condition on a missing key never creates it. "0" matters: it is
	// GCS's create-only generation, which an adapter must not pass through.
	for i, v := range []store.Version{v1, "0"} {
		missing := e.key(fmt.Sprintf("missing-%d", i))
		_, err := e.s.Put(ctx, missing, e.body("never"), store.PutOptions{Condition: store.IfVersion(v)})
		expectRejected(t, "a write conditioned on version "+string(v)+" of a missing key", err, "it created the key")
		if _, err := e.s.Get(ctx, missing); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after a rejected conditional write of a missing key, get: %v, want ErrNotFound", err)
		}
	}
	_, err = e.s.Put(ctx, k, e.body("zero"), store.PutOptions{Condition: store.IfVersion("0")})
	expectRejected(t, `a write conditioned on version "0" of an existing key`, err, "version \"0\" was not treated as a version")
	checkBody(t, "after the rejected writes", mustGet(t, ctx, e.s2, k), b3, v3)
}

func testVersionChanges(t tb, e *env) {
	ctx, k := e.ctx, e.key("versions")
	seen := map[store.Version]int{}
	var last store.Version
	var lastBody []byte
	for i := range 4 {
		lastBody = e.body("write")
		last = mustPut(t, ctx, e.s, k, lastBody, store.PutOptions{})
		if j, dup := seen[last]; dup {
			t.Errorf("write %d of a different body got version %q again (write %d had it)", i+1, last, j+1)
		}
		seen[last] = i
	}
	checkBody(t, "after four writes", mustGet(t, ctx, e.s, k), lastBody, last)
	l := listChecked(t, ctx, e.s, store.ListOptions{Prefix: k})
	if len(l.objects) != 1 {
		t.Fatalf("listing %s: %d objects, want 1", k, len(l.objects))
	}
	if o := l.objects[0]; o.Version != last || o.Size != int64(len(lastBody)) {
		t.Errorf("listing reports version %q size %d, Get reports %q size %d", o.Version, o.Size, last, len(lastBody))
	}
}

// testDeleteRecreateSwap: a version names one object, not one key. After a
// delete and a re-create, a write conditioned on a version from before the
// delete must be rejected, or a compare-and-swap lands on an object its
// writer never read (the fleet deletes and re-creates node leases, and an
// owner record's swap must not survive that). Bodies differ, as CellB's
// always do (an S3 ETag is the body's MD5).
func testDeleteRecreateSwap(t tb, e *env) {
	ctx, k := e.ctx, e.key("recreated")
	old := mustPut(t, ctx, e.s, k, e.body("before the delete"), store.PutOptions{Condition: store.IfAbsent})
	if err := e.s.Delete(ctx, k); err != nil {
		t.Fatalf("delete %s: %v", k, err)
	}
	bNew := e.body("re-created")
	vNew := mustPut(t, ctx, e.s2, k, bNew, store.PutOptions{Condition: store.IfAbsent})
	if vNew == old {
		t.Errorf("the re-created object got version %q again, the version of the deleted one", old)
	}
	_, err := e.s.Put(ctx, k, e.body("swap on the old version"), store.PutOptions{Condition: store.IfVersion(old)})
	expectRejected(t, "a write conditioned on the version of the deleted object", err,
		"versions repeat across a delete and re-create, so a stale compare-and-swap lands on a different object")
	checkBody(t, "after the swap on the old version", mustGet(t, ctx, e.s2, k), bNew, vNew)
	// And the re-created object's own version still swaps.
	bLast := e.body("swap on the new version")
	vLast := mustPut(t, ctx, e.s, k, bLast, store.PutOptions{Condition: store.IfVersion(vNew)})
	checkBody(t, "after the swap on the new version", mustGet(t, ctx, e.s, k), bLast, vLast)
}
