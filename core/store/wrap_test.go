package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// counting embeds an adapter (memstore) and overrides its whole-object
// calls, as test doubles do.
type counting struct {
	*memstore.Store
	gets, puts int
}

func (c *counting) Get(ctx context.Context, key string) (*store.Object, error) {
	c.gets++
	return c.Store.Get(ctx, key)
}

func (c *counting) GetData(ctx context.Context, key string) (*store.Object, error) {
	c.gets++
	return c.Store.GetData(ctx, key)
}

func (c *counting) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	c.puts++
	return c.Store.Put(ctx, key, data, opts)
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

	c := &counting{Store: memstore.New()}
	b := store.Wrap(c, spy)
	if under == c.Driver() {
		t.Fatal("Wrap of a type overriding its adapter went around the overrides")
	}
	// The Bucket's whole-object calls reach the Store's own; its streamed
	// ones the Store's streaming half.
	if _, err := b.Put(ctx, "k", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutFrom(ctx, "s", strings.NewReader("y"), 1, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if o, err := b.Get(ctx, "k"); err != nil || string(o.Data) != "x" {
		t.Fatalf("Get: %+v, %v", o, err)
	}
	if o, err := b.GetData(ctx, "k"); err != nil || string(o.Data) != "x" {
		t.Fatalf("GetData: %+v, %v", o, err)
	}
	r, err := b.NewRangeReader(ctx, "s", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if c.gets != 2 || c.puts != 1 {
		t.Fatalf("the overriding calls ran %d gets and %d puts, want 2 and 1", c.gets, c.puts)
	}
}
