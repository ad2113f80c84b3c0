package store_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// countingReads embeds an adapter (memstore) and overrides its reads, as
// test doubles do.
type countingReads struct {
	*memstore.Store
	reads int
}

func (c *countingReads) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	c.reads++
	return c.Store.NewRangeReader(ctx, key, offset, length)
}

func (c *countingReads) GetData(ctx context.Context, key string) (*store.Object, error) {
	c.reads++
	return c.Store.GetData(ctx, key)
}

// TestWrapFindsTheAdaptersDriver: a middleware wraps an adapter's own
// driver (no second Bucket in the path), but a type that embeds an adapter
// to override it keeps its overrides.
func TestWrapFindsTheAdaptersDriver(t *testing.T) {
	ctx := t.Context()
	var under store.Driver
	spy := func(d store.Driver) store.Driver { under = d; return d }

	m := memstore.New()
	store.Wrap(m, spy)
	if under != m.Driver() {
		t.Fatalf("Wrap(adapter) wrapped %T, not the adapter's driver", under)
	}

	c := &countingReads{Store: memstore.New()}
	if _, err := c.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	b := store.Wrap(c, spy)
	if under == c.Driver() {
		t.Fatal("Wrap of a type overriding its adapter went around the overrides")
	}
	if o, err := b.Get(ctx, "k"); err != nil || string(o.Data) != "x" {
		t.Fatalf("Get: %+v, %v", o, err)
	}
	if o, err := b.GetData(ctx, "k"); err != nil || string(o.Data) != "x" {
		t.Fatalf("GetData: %+v, %v", o, err)
	}
	if c.reads != 2 {
		t.Fatalf("the overriding reads ran %d times, want 2", c.reads)
	}
}
