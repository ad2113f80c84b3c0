package celltest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
)

// Benchmark measures the runtime's cost per event on the harness's driver
// against a baseline measured in the same run: the same read-modify-write
// as one transaction on a raw connection. Each sub-benchmark reports
// "x-raw", its time per operation over the baseline's.
func Benchmark(b *testing.B, h Harness) {
	dir := b.TempDir()
	// The baseline runs first as a sub-benchmark; its last (final) round
	// gives the time the others are compared with.
	var baseNs float64
	b.Run("raw-transaction", func(b *testing.B) {
		benchRaw(b, h, filepath.Join(dir, "raw.db"))
		baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(1, "x-raw")
	})
	if baseNs == 0 {
		b.Fatal("the baseline benchmark did not run")
	}
	ratio := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x-raw")
	}

	for _, mode := range []struct {
		name string
		log  durability.Log
	}{{"local", durability.Local{}}, {"async-log", NewControlLog()}} {
		rt, ns := benchRuntime(b, h, filepath.Join(dir, mode.name), mode.log)
		s := ns.Get(ns.IDFromName("bench"))
		b.Run("increment/"+mode.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := cell.Call(b.Context(), s, func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }); err != nil {
					b.Fatal(err)
				}
			}
			ratio(b)
		})
		b.Run("read/"+mode.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := cell.Call(b.Context(), s, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }); err != nil {
					b.Fatal(err)
				}
			}
			ratio(b)
		})
		b.Run("increment-parallel/"+mode.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cell.Call(context.Background(), s, func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }); err != nil {
						b.Error(err)
						return
					}
				}
			})
			ratio(b)
		})
		rt.Close(context.Background())
		if l, ok := mode.log.(*ControlLog); ok {
			l.Stop()
		}
	}
}

func benchRuntime(b *testing.B, h Harness, dir string, log durability.Log) (*cell.Runtime, *cell.Namespace[*probe]) {
	rt, err := cell.New(cell.Options{ScriptName: "bench", Driver: h.Driver, DataDir: dir, Log: log, Logger: quietLogger(), IdleTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	ns, err := cell.Register(rt, "Bench", func(ctx context.Context, st *cell.State) (*probe, error) {
		_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS t(k TEXT PRIMARY KEY, v INTEGER)")
		return &probe{st: st}, err
	})
	if err != nil {
		b.Fatal(err)
	}
	return rt, ns
}

// benchRaw is the baseline: one increment as a transaction on a raw
// connection, with no runtime around it.
func benchRaw(b *testing.B, h Harness, path string) {
	ctx := context.Background()
	conn, err := h.Driver.Open(ctx, driverConfig(path))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS t(k TEXT PRIMARY KEY, v INTEGER)"); err != nil {
		b.Fatal(err)
	}
	step := func() error {
		if err := conn.Begin(ctx); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, "SELECT v FROM t WHERE k = ?", "n")
		if err != nil {
			return err
		}
		var v int64
		if rows.Next() {
			v = rows.Values()[0].(int64)
		}
		rows.Close()
		if _, err := conn.Exec(ctx, "INSERT INTO t(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", "n", v+1); err != nil {
			return err
		}
		return conn.Commit(ctx)
	}
	for b.Loop() {
		if err := step(); err != nil {
			b.Fatal(fmt.Errorf("raw increment: %w", err))
		}
	}
}
