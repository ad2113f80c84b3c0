package faultstore_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestStreamedPutFailsMidBodyAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	inner := memstore.New()
	fs := faultstore.New(inner, faultstore.Config{})
	old, err := fs.Put(ctx, "k", []byte("old"), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: "k", Fault: faultstore.Fail, AfterBytes: 1000})
	body := bytes.Repeat([]byte("x"), 5000)
	var seen countReader
	seen.r = bytes.NewReader(body)
	_, err = store.PutFrom(ctx, fs, "k", &seen, int64(len(body)), store.PutOptions{})
	if !errors.Is(err, faultstore.ErrInjected) || store.IsAmbiguous(err) {
		t.Fatalf("put with a body failing after 1000 bytes: %v", err)
	}
	if seen.n != 1000 {
		t.Fatalf("the wrapped store read %d bytes of the body before it failed, want 1000", seen.n)
	}
	o, err := inner.Get(ctx, "k")
	if err != nil || string(o.Data) != "old" || o.Version != old {
		t.Fatalf("after the failed stream: %+v, %v", o, err)
	}
	if st := fs.Stats(); st.Put.Calls != 2 || st.Put.Failed != 1 {
		t.Fatalf("stats %+v", st.Put)
	}
	// The rule is used up: the next streamed put applies.
	if _, err := store.PutFrom(ctx, fs, "k", bytes.NewReader(body), -1, store.PutOptions{Condition: store.IfVersion(old)}); err != nil {
		t.Fatal(err)
	}
	if o, _ := inner.Get(ctx, "k"); !bytes.Equal(o.Data, body) {
		t.Fatalf("the second streamed put wrote %d bytes", len(o.Data))
	}
}

func TestStreamedGetFailsMidBody(t *testing.T) {
	ctx := t.Context()
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	body := bytes.Repeat([]byte("y"), 5000)
	if _, err := fs.Put(ctx, "k", body, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	fs.Script(faultstore.Rule{Op: faultstore.OpGet, Fault: faultstore.Fail, AfterBytes: 700})
	r, err := store.NewRangeReader(ctx, fs, "k", 100, -1)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if !errors.Is(err, faultstore.ErrInjected) || len(got) != 700 {
		t.Fatalf("read %d bytes, err %v; want 700 then ErrInjected", len(got), err)
	}
	// A whole-object Get with the same rule fails before it starts.
	fs.Script(faultstore.Rule{Op: faultstore.OpGet, Fault: faultstore.Fail, AfterBytes: 700})
	if _, err := fs.Get(ctx, "k"); !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("get: %v", err)
	}
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
