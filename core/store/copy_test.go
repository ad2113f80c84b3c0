package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// plain hides memstore's Copier and Streamer: store.Copy must fall back to
// a read and a create-only write.
type plain struct{ s *memstore.Store }

func (p plain) Get(ctx context.Context, k string) (*store.Object, error) { return p.s.Get(ctx, k) }
func (p plain) Put(ctx context.Context, k string, d []byte, o store.PutOptions) (store.Version, error) {
	return p.s.Put(ctx, k, d, o)
}
func (p plain) Delete(ctx context.Context, k string) error { return p.s.Delete(ctx, k) }
func (p plain) List(ctx context.Context, o store.ListOptions) (store.ListPage, error) {
	return p.s.List(ctx, o)
}

func TestCopyThroughPrefixMapsBothKeys(t *testing.T) {
	ctx := t.Context()
	base := memstore.New()
	a, err := store.WithPrefix(base, "team/a")
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]string{"k": "v"}
	if _, err := a.Put(ctx, "src", []byte("body"), store.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(store.Copier); !ok {
		t.Fatal("the prefixed store does not forward store.Copier")
	}
	if _, err := store.Copy(ctx, a, "src", "dir/dst"); err != nil {
		t.Fatal(err)
	}
	o, err := base.Get(ctx, "team/a/dir/dst")
	if err != nil || string(o.Data) != "body" || o.Metadata["k"] != "v" {
		t.Fatalf("copy under the prefix: %+v, %v", o, err)
	}
	if _, err := base.Get(ctx, "dir/dst"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the copy escaped the prefix: %v", err)
	}
	if _, err := store.Copy(ctx, a, "src", "../x"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("copy to a key climbing out of the prefix: %v, want ErrInvalidKey", err)
	}
}

func TestCopyFallsBackToAStreamedCreateOnlyWrite(t *testing.T) {
	ctx := t.Context()
	s := plain{memstore.New()}
	hdr := store.ContentHeaders{ContentType: "text/plain"}
	if _, err := s.Put(ctx, "src", []byte("body"), store.PutOptions{Metadata: map[string]string{"k": "v"}, Headers: hdr}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, s, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	o, err := s.Get(ctx, "dst")
	if err != nil || string(o.Data) != "body" || o.Metadata["k"] != "v" || o.Headers != hdr {
		t.Fatalf("fallback copy: %+v, %v", o, err)
	}
	if _, err := store.Copy(ctx, s, "src", "dst"); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("fallback copy onto an existing key: %v, want ErrPreconditionFailed", err)
	}
	if _, err := store.Copy(ctx, s, "missing", "dst2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fallback copy of a missing key: %v, want ErrNotFound", err)
	}
}
