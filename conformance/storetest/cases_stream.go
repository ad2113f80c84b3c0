package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cellb/cellb/core/store"
)

// trickle is a body of unknown size: it has only Read (no Len, Seek or
// WriteTo an SDK could use to learn the size) and gives its bytes in
// uneven pieces, as a pipe or an encoder would.
type trickle struct {
	data []byte
	off  int
	i    int
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		return 0, io.EOF
	}
	r.i++
	n := min(len(p), len(r.data)-r.off, 1+(r.i*7919)%(256<<10))
	copy(p, r.data[r.off:r.off+n])
	r.off += n
	return n, nil
}

// errBodyFailed is the failure of the bodies that die mid-stream.
var errBodyFailed = errors.New("storetest: the body's reader failed mid-stream")

// failingBody gives the first n bytes of data, then fails with err.
type failingBody struct {
	trickle
	n   int
	err error
}

// cancellingBody gives all of data but calls cancel once n bytes are out.
type cancellingBody struct {
	trickle
	n      int
	cancel func()
}

func (r *cancellingBody) Read(p []byte) (int, error) {
	if r.off >= r.n && r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	return r.trickle.Read(p)
}

func (r *failingBody) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, r.err
	}
	if len(p) > r.n-r.off {
		p = p[:r.n-r.off]
	}
	return r.trickle.Read(p)
}

// streamBody makes a streaming body of the configured size.
func (e *env) streamBody(label string) []byte {
	return largeBody(e.prefix+label+string(e.body(label)), e.cfg.streamSize)
}

// readAll opens the whole object with NewReader and reads it.
func readAll(t tb, ctx context.Context, s store.Store, key string) (*store.Reader, []byte) {
	t.Helper()
	r, err := store.NewReader(ctx, s, key)
	if err != nil {
		t.Fatalf("stream get %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("stream get %s: reading the body: %v", key, err)
	}
	return r, b
}

// sameBytes fails the case unless got is want, naming the first difference.
func sameBytes(t tb, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: %d bytes read, %d written, first difference at byte %d", what, len(got), len(want), i)
}

func testStreamPut(t tb, e *env) {
	if _, ok := e.s.(store.Streamer); !ok {
		t.Logf("the store does not implement store.Streamer: streamed calls used the whole-object fallback")
	}
	ctx := e.ctx
	md := map[string]string{"cellb-streamed": "yes"}

	// Unknown size, crossing part boundaries.
	k := e.key("unknown-size")
	want := e.streamBody("unknown")
	e.progressf("streaming %s of unknown size", sizeString(len(want)))
	v, err := store.PutFrom(ctx, e.s, k, &trickle{data: want}, -1, store.PutOptions{Metadata: md})
	if err != nil {
		t.Fatalf("streamed put of unknown size: %v", err)
	}
	if v == "" {
		t.Fatalf("streamed put returned an empty version")
	}
	o := mustGet(t, ctx, e.s2, k)
	sameBytes(t, "a streamed put of unknown size, read whole by the other client", o.Data, want)
	if o.Version != v {
		t.Errorf("read version %q, the streamed put returned %q", o.Version, v)
	}
	if !sameMetadata(o.Metadata, md) {
		t.Errorf("metadata of a streamed put read back as %q, want %q", o.Metadata, md)
	}
	o = nil
	r, got := readAll(t, ctx, e.s2, k)
	sameBytes(t, "a streamed put of unknown size, read as a stream", got, want)
	if r.Version != v || r.Size != int64(len(want)) || r.Offset != 0 || r.Length != int64(len(want)) {
		t.Errorf("stream of the whole object: version %q size %d range %d+%d, want %q, %d, 0+%d", r.Version, r.Size, r.Offset, r.Length, v, len(want), len(want))
	}
	if !sameMetadata(r.Metadata, md) {
		t.Errorf("metadata of a stream read back as %q, want %q", r.Metadata, md)
	}
	l := listChecked(t, ctx, e.s, store.ListOptions{Prefix: k})
	if len(l.objects) != 1 || l.objects[0].Size != int64(len(want)) || l.objects[0].Version != v {
		t.Errorf("listing of the streamed object: %+v, want one object of %d bytes, version %q", l.objects, len(want), v)
	}

	// Known size, replacing the object.
	want2 := e.streamBody("known")
	v2, err := store.PutFrom(ctx, e.s, k, &trickle{data: want2}, int64(len(want2)), store.PutOptions{Condition: store.IfVersion(v)})
	if err != nil {
		t.Fatalf("streamed put of known size, replacing: %v", err)
	}
	_, got = readAll(t, ctx, e.s2, k)
	sameBytes(t, "a streamed put of known size", got, want2)
	if o := mustGet(t, ctx, e.s2, k); o.Version != v2 || len(o.Metadata) != 0 {
		t.Errorf("after the replacing streamed put: version %q metadata %q, want %q and none", o.Version, o.Metadata, v2)
	}

	// Empty bodies, of unknown and known size.
	for _, size := range []int64{-1, 0} {
		ek := e.key(fmt.Sprintf("empty%d", size))
		if _, err := store.PutFrom(ctx, e.s, ek, &trickle{}, size, store.PutOptions{}); err != nil {
			t.Fatalf("streamed put of an empty body (size %d): %v", size, err)
		}
		if o := mustGet(t, ctx, e.s2, ek); len(o.Data) != 0 {
			t.Errorf("an empty streamed body (size %d) read back as %d bytes", size, len(o.Data))
		}
	}

	// A body shorter or longer than its declared size writes nothing.
	for _, c := range []struct {
		name  string
		size  int64
		bytes int
	}{{"short", 1000, 999}, {"long", 1000, 1001}} {
		bk := e.key("declared-" + c.name)
		_, err := store.PutFrom(ctx, e.s, bk, &trickle{data: want[:c.bytes]}, c.size, store.PutOptions{})
		if !errors.Is(err, store.ErrBodySize) {
			t.Errorf("a %s body (%d bytes declared %d): %v, want ErrBodySize", c.name, c.bytes, c.size, err)
		}
		if _, err := e.s2.Get(ctx, bk); !store.IsNotFound(err) {
			t.Errorf("a %s body was written (get: %v)", c.name, err)
		}
	}
}

func testStreamRange(t tb, e *env) {
	ctx, k := e.ctx, e.key("ranged")
	want := e.streamBody("ranged")
	n := int64(len(want))
	md := map[string]string{"a": "1"}
	v := mustPut(t, ctx, e.s, k, want, store.PutOptions{Metadata: md})

	for _, c := range []struct {
		name        string
		off, length int64
		wantLen     int64
	}{
		{"first byte", 0, 1, 1},
		{"last byte", n - 1, 1, 1},
		{"one past a part boundary", 8<<20 + 1, 5 << 20, 5 << 20},
		{"middle to the end", n / 3, -1, n - n/3},
		{"running past the end", n - 10, 100, 10},
		{"at the end", n, 10, 0},
		{"nothing", 5, 0, 0},
	} {
		if c.off+c.wantLen > n {
			continue // a lowered size
		}
		r, err := store.NewRangeReader(ctx, e.s2, k, c.off, c.length)
		if err != nil {
			t.Errorf("range %s (%d+%d): %v", c.name, c.off, c.length, err)
			continue
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Errorf("range %s: reading: %v", c.name, err)
			continue
		}
		sameBytes(t, fmt.Sprintf("range %s (%d+%d)", c.name, c.off, c.length), got, want[c.off:c.off+c.wantLen])
		if r.Offset != c.off || r.Length != c.wantLen || r.Size != n || r.Version != v {
			t.Errorf("range %s: reader says range %d+%d of %d bytes, version %q; want %d+%d of %d, version %q",
				c.name, r.Offset, r.Length, r.Size, r.Version, c.off, c.wantLen, n, v)
		}
		if !sameMetadata(r.Metadata, md) {
			t.Errorf("range %s: metadata %q, want %q", c.name, r.Metadata, md)
		}
	}
	for _, off := range []int64{n + 1, n + 1<<20, -1} {
		r, err := store.NewRangeReader(ctx, e.s2, k, off, 10)
		if err == nil {
			r.Close()
		}
		if !errors.Is(err, store.ErrInvalidRange) {
			t.Errorf("a range from %d of a %d-byte object: %v, want ErrInvalidRange", off, n, err)
		}
	}
	if _, err := store.NewRangeReader(ctx, e.s2, e.key("missing"), 0, 10); !store.IsNotFound(err) {
		t.Errorf("a range of a missing key: %v, want ErrNotFound", err)
	}
}

func testStreamFailure(t tb, e *env) {
	ctx := e.ctx
	body := e.streamBody("failing")
	// Past the 16 MiB from which adapters upload in parts (at the default
	// size), so parts were uploaded before the body fails.
	cut := len(body) - len(body)/17

	existing := e.key("existing")
	old := e.body("old")
	vOld := mustPut(t, ctx, e.s, existing, old, store.PutOptions{})
	fresh := e.key("fresh")

	for _, c := range []struct {
		name string
		want error
		put  func(key string) error
	}{
		{"a reader failing mid-body", errBodyFailed, func(key string) error {
			_, err := store.PutFrom(ctx, e.s, key, &failingBody{trickle: trickle{data: body}, n: cut, err: errBodyFailed}, -1, store.PutOptions{})
			return err
		}},
		{"a reader failing mid-body of a declared size", errBodyFailed, func(key string) error {
			_, err := store.PutFrom(ctx, e.s, key, &failingBody{trickle: trickle{data: body}, n: cut, err: errBodyFailed}, int64(len(body)), store.PutOptions{})
			return err
		}},
		{"a context cancelled mid-body", context.Canceled, func(key string) error {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			// The caller gives up after cut bytes; the reader goes on
			// giving the rest, so only the store can stop the write.
			_, err := store.PutFrom(cctx, e.s, key, &cancellingBody{trickle: trickle{data: body}, n: cut, cancel: cancel}, -1, store.PutOptions{})
			return err
		}},
	} {
		for _, key := range []string{fresh, existing} {
			err := c.put(key)
			if !errors.Is(err, c.want) {
				t.Errorf("%s, putting %s: %v, want an error matching %v", c.name, key, err, c.want)
			}
			if store.IsAmbiguous(err) {
				t.Errorf("%s, putting %s: the error is ambiguous, but the body never ended so nothing may be written: %v", c.name, key, err)
			}
		}
		if _, err := e.s2.Get(ctx, fresh); !store.IsNotFound(err) {
			t.Errorf("%s left an object where there was none (get: %v)", c.name, err)
			_ = e.s.Delete(ctx, fresh)
		}
		checkBody(t, c.name+": the object it tried to replace", mustGet(t, ctx, e.s2, existing), old, vOld)
	}
	l := listChecked(t, ctx, e.s, store.ListOptions{Prefix: e.prefix})
	if len(l.objects) != 1 {
		t.Errorf("after the failed streams the listing holds %d objects, want only %s: %+v", len(l.objects), existing, l.objects)
	}
}

func testStreamConditions(t tb, e *env) {
	ctx, k := e.ctx, e.key("cond")
	first := e.streamBody("first")
	v1, err := store.PutFrom(ctx, e.s, k, &trickle{data: first}, -1, store.PutOptions{Condition: store.IfAbsent})
	if err != nil {
		t.Fatalf("streamed create-only put of a new key: %v", err)
	}
	lose := func(what string, cond store.Condition) {
		t.Helper()
		b := e.streamBody(what)
		_, err := store.PutFrom(ctx, e.s2, k, &trickle{data: b}, -1, store.PutOptions{Condition: cond})
		if !store.IsPreconditionFailed(err) {
			t.Errorf("streamed put with %s (%s): %v, want ErrPreconditionFailed", what, cond, err)
		}
	}
	lose("create-only on an existing key", store.IfAbsent)
	v2, err := store.PutFrom(ctx, e.s, k, &trickle{data: e.streamBody("second")}, -1, store.PutOptions{Condition: store.IfVersion(v1)})
	if err != nil {
		t.Fatalf("streamed put on the current version: %v", err)
	}
	second := mustGet(t, ctx, e.s2, k)
	if second.Version != v2 {
		t.Errorf("read version %q, the put returned %q", second.Version, v2)
	}
	lose("a stale version", store.IfVersion(v1))
	lose("a foreign version", store.IfVersion("not-a-version-of-this-store"))
	checkBody(t, "the object after the lost conditions", mustGet(t, ctx, e.s, k), second.Data, v2)
	lose2 := e.key("absent")
	_, err = store.PutFrom(ctx, e.s, lose2, &trickle{data: first}, int64(len(first)), store.PutOptions{Condition: store.IfVersion(v2)})
	if !store.IsPreconditionFailed(err) {
		t.Errorf("streamed put with a version on a missing key: %v, want ErrPreconditionFailed", err)
	}
	if _, err := e.s2.Get(ctx, lose2); !store.IsNotFound(err) {
		t.Errorf("a streamed put whose condition failed created %s (get: %v)", lose2, err)
	}
}
