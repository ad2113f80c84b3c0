package metrics

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

type dataGetter struct {
	*memstore.Store
	n int
}

func (d *dataGetter) GetData(ctx context.Context, key string) (*store.Object, error) {
	d.n++
	return d.Store.Get(ctx, key)
}

// The instrumented store passes store.GetData to the wrapped store's own
// (one request on GCS) instead of turning it into a full Get.
func TestInstrumentedStoreForwardsGetData(t *testing.T) {
	ctx := t.Context()
	inner := &dataGetter{Store: memstore.New()}
	inner.Put(ctx, "k", []byte("x"), store.PutOptions{})
	s, err := InstrumentStore(noop.NewMeterProvider(), inner)
	if err != nil {
		t.Fatal(err)
	}
	o, err := store.GetData(ctx, s, "k")
	if err != nil || string(o.Data) != "x" || inner.n != 1 {
		t.Fatalf("GetData: %+v, %v, inner GetData ran %d times (want 1)", o, err, inner.n)
	}
}
