package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cellb/cellb/core/store"
)

// testCopy: store.Copy (the store's Copier, or a streamed read and
// create-only write) makes a byte-identical destination with the source's
// metadata and content headers, leaves the source as it was, never
// replaces an existing destination (ErrPreconditionFailed, which a fork
// relies on: its destination is a cell never written) and gives
// ErrNotFound for a missing source without creating anything. Racing
// copies onto one key have exactly one winner.
func testCopy(t tb, e *env) {
	ctx := e.ctx
	md := map[string]string{"litestream-timestamp": "2026-05-30T02:46:41.091Z", "cellb-txid": "00000000000000ff"}
	hdr := store.ContentHeaders{ContentType: "application/octet-stream", ContentDisposition: `attachment; filename="a b.ltx"`, CacheControl: "no-store"}
	check := func(what, key string, want []byte, v store.Version, wantMD map[string]string, wantHdr store.ContentHeaders) {
		t.Helper()
		for i, c := range []store.Store{e.s, e.s2} {
			o := mustGet(t, ctx, c, key)
			checkBody(t, fmt.Sprintf("%s (client %d)", what, i+1), o, want, v)
			if !sameMetadata(o.Metadata, wantMD) {
				t.Errorf("%s: metadata %q, want %q (the source's)", what, o.Metadata, wantMD)
			}
			if !sameHeaders(o.Headers, wantHdr) {
				t.Errorf("%s: content headers %+v, want %+v (the source's)", what, o.Headers, wantHdr)
			}
		}
	}

	for _, pair := range [][2]string{
		{"copy/src", "copy/dst"},
		{"copy/Class:0123abcd/log/0000/0000000000000001-0000000000000001.bin", "copy/Class:9876fedc/log/0000/0000000000000001-0000000000000001.bin"},
		{"copy/with space", "copy/other dir/with space"},
	} {
		src, dst := e.key(pair[0]), e.key(pair[1])
		b := e.body("copy source " + pair[0])
		sv := mustPut(t, ctx, e.s, src, b, store.PutOptions{Metadata: md, Headers: hdr})
		v, err := store.Copy(ctx, e.s, src, dst)
		if err != nil {
			t.Fatalf("copy %s to %s: %v", pair[0], pair[1], err)
		}
		if v == "" {
			t.Fatalf("copy %s to %s returned an empty version", pair[0], pair[1])
		}
		check(fmt.Sprintf("copy of %q", pair[0]), dst, b, v, md, hdr)
		check(fmt.Sprintf("source %q after the copy", pair[0]), src, b, sv, md, hdr)

		// The destination is an object of its own: replacing the source
		// does not change it.
		b2 := e.body("copy source replaced")
		mustPut(t, ctx, e.s, src, b2, store.PutOptions{})
		check(fmt.Sprintf("copy of %q after its source was replaced", pair[0]), dst, b, v, md, hdr)

		// Create-only: a second copy onto it is refused and changes nothing.
		_, err = store.Copy(ctx, e.s2, src, dst)
		if !errors.Is(err, store.ErrPreconditionFailed) {
			t.Errorf("copy onto an existing %q: %v, want ErrPreconditionFailed", pair[1], err)
		}
		check(fmt.Sprintf("existing %q after a refused copy", pair[1]), dst, b, v, md, hdr)
	}

	// A missing source: ErrNotFound, and no destination.
	dst := e.key("copy/from-nothing")
	if _, err := store.Copy(ctx, e.s, e.key("copy/never-written"), dst); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("copy of a missing source: %v, want ErrNotFound", err)
	}
	if _, err := e.s2.Get(ctx, dst); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a copy of a missing source, get of the destination: %v, want ErrNotFound", err)
	}

	// An empty object, and one without metadata or headers.
	src := e.key("copy/empty")
	mustPut(t, ctx, e.s, src, nil, store.PutOptions{})
	v, err := store.Copy(ctx, e.s, src, e.key("copy/empty-copy"))
	if err != nil {
		t.Fatalf("copy of an empty object: %v", err)
	}
	check("copy of an empty object", e.key("copy/empty-copy"), nil, v, nil, store.ContentHeaders{})

	// A streamed, multi-part source (an L1 file or a snapshot).
	big := e.streamBody("copy-large")
	src = e.key("copy/large")
	if _, err := store.PutFrom(ctx, e.s, src, &trickle{data: big}, int64(len(big)), store.PutOptions{Metadata: md}); err != nil {
		t.Fatalf("stream put %s: %v", src, err)
	}
	if _, err := store.Copy(ctx, e.s, src, e.key("copy/large-copy")); err != nil {
		t.Fatalf("copy of a %d-byte object: %v", len(big), err)
	}
	r, got := readAll(t, ctx, e.s2, e.key("copy/large-copy"))
	sameBytes(t, "copy of a large object", got, big)
	if !sameMetadata(r.Metadata, md) {
		t.Errorf("copy of a large object: metadata %q, want %q", r.Metadata, md)
	}

	// Copies racing onto one key: exactly one applies.
	src = e.key("copy/race-src")
	mustPut(t, ctx, e.s, src, e.body("race"), store.PutOptions{})
	for round := range 3 {
		dst := e.key(fmt.Sprintf("copy/race-%d", round))
		var won, unknown atomic.Int64
		goAll(t, 8, func(i int) {
			_, err := store.Copy(ctx, e.client(i), src, dst)
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, store.ErrAmbiguous):
				unknown.Add(1)
			case errors.Is(err, store.ErrPreconditionFailed):
			default:
				t.Errorf("racing copy %d: %v (want success, ErrPreconditionFailed or ErrAmbiguous)", i, err)
			}
		})
		if won.Load() > 1 || won.Load()+unknown.Load() == 0 {
			t.Errorf("round %d: %d of 8 racing copies onto one key applied (%d ambiguous), want exactly 1", round, won.Load(), unknown.Load())
		}
	}
}
