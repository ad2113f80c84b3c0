package app

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/drivers/wasm"
)

// BenchmarkCallMetrics measures a read call on one cell (local
// durability, so the call's cost is the runtime's and not a disk's) without a MeterProvider — the baseline — and with the SDK
// and Prometheus exporter that serve --admin-listen wires, in the same
// run:
//
//	go test -run '^$' -bench CallMetrics ./cmd/cellb/app
func BenchmarkCallMetrics(b *testing.B) {
	pm, err := newPrometheusMetrics()
	if err != nil {
		b.Fatal(err)
	}
	defer pm.provider.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		mp   metric.MeterProvider
	}{{"none", nil}, {"otel-sdk", pm.provider}} {
		b.Run(c.name, func(b *testing.B) {
			rt, err := cell.New(cell.Options{ScriptName: "bench", Driver: wasm.New(), DataDir: b.TempDir(),
				Logger: quietLogger(), IdleTimeout: -1, MeterProvider: c.mp})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(context.Background())
			ns, err := cell.Register(rt, "Bench", newMetricsCell)
			if err != nil {
				b.Fatal(err)
			}
			stub := ns.Get(ns.IDFromName("m"))
			ctx := context.Background()
			for b.Loop() {
				if _, err := cell.Call(ctx, stub, metricsRead); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// metricsCell is a one-row counter kept in SQL, which the benchmark reads.
type metricsCell struct{ st *cell.State }

func newMetricsCell(ctx context.Context, st *cell.State) (*metricsCell, error) {
	_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT OR IGNORE INTO n VALUES (1, 0)")
	return &metricsCell{st}, err
}

func metricsRead(ctx context.Context, c *metricsCell) (int64, error) {
	var v int64
	err := c.st.SQL().QueryRow(ctx, "SELECT v FROM n WHERE id = 1").Scan(&v)
	return v, err
}
