package metrics

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

type copier struct {
	*memstore.Store
	n int
}

func (c *copier) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	c.n++
	return c.Store.Copy(ctx, src, dst)
}

// The instrumented store passes store.Copy to the wrapped store's Copier
// (a copy inside the bucket) instead of streaming the object through.
func TestInstrumentedStoreForwardsCopy(t *testing.T) {
	ctx := t.Context()
	inner := &copier{Store: memstore.New()}
	inner.Put(ctx, "k", []byte("x"), store.PutOptions{})
	s, err := InstrumentStore(noop.NewMeterProvider(), inner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, s, "k", "k2"); err != nil || inner.n != 1 {
		t.Fatalf("Copy: %v, inner Copy ran %d times (want 1)", err, inner.n)
	}
}
