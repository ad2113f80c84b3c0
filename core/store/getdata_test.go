package store_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// dataGetter is a memstore with a store.DataGetter that counts its calls
// and leaves Metadata empty, as a real one may.
type dataGetter struct {
	*memstore.Store
	n int
}

func (d *dataGetter) GetData(ctx context.Context, key string) (*store.Object, error) {
	d.n++
	o, err := d.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	out := *o
	out.Metadata = nil
	return &out, nil
}

// GetData uses a store's DataGetter when it has one, Get otherwise, and a
// prefixed store passes it through with the key made relative again.
func TestGetDataUsesTheStoresReader(t *testing.T) {
	ctx := t.Context()
	inner := &dataGetter{Store: memstore.New()}
	v, err := inner.Put(ctx, "p/k", []byte("x"), store.PutOptions{Metadata: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := store.GetData(ctx, inner, "p/k")
	if err != nil || string(o.Data) != "x" || o.Version != v || inner.n != 1 {
		t.Fatalf("GetData on a DataGetter: %+v, %v, %d calls", o, err, inner.n)
	}
	pre, err := store.WithPrefix(inner, "p/")
	if err != nil {
		t.Fatal(err)
	}
	o, err = store.GetData(ctx, pre, "k")
	if err != nil || string(o.Data) != "x" || o.Version != v || o.Key != "k" || inner.n != 2 {
		t.Fatalf("GetData through a prefix: %+v, %v, %d calls (want the inner DataGetter's second)", o, err, inner.n)
	}
	plain := memstore.New()
	plain.Put(ctx, "k", []byte("y"), store.PutOptions{Metadata: map[string]string{"a": "b"}})
	o, err = store.GetData(ctx, plain, "k")
	if err != nil || string(o.Data) != "y" || o.Metadata["a"] != "b" {
		t.Fatalf("GetData falling back to Get: %+v, %v", o, err)
	}
	if _, err := store.GetData(ctx, pre, "missing"); !store.IsNotFound(err) {
		t.Fatalf("GetData of a missing key through a prefix: %v", err)
	}
}
