package tests

// Issue 13, item 3: what an idle open cell holds, per driver, on the
// embedded default. Results are in docs/benchmarks.md ("Idle cells").
//
//	CELLB_IDLE_CELLS=1000 go test -run '^$' -bench BenchmarkIdleCellsByKind -benchtime 1x ./tests

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
)

// BenchmarkIdleCellsByKind opens N cells with one read each and keeps them open
// and idle, reporting the resident memory (RSS) and Go heap each adds:
// "stored" cells were written before (a database file, reopened), "new"
// cells were never written (the in-memory database lazy activation opens).
// "held" cells keep their database connection (Options.IdleConnTimeout
// negative, as every open cell did before it existed); "released" cells
// are measured once each has released it (IdleConnTimeout 20 ms here,
// 10 s by default). Goals (issue 13): wasm ≤ 100 KiB, cgo ≤ 64 KiB a cell.
func BenchmarkIdleCellsByKind(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("CELLB_IDLE_CELLS")); err == nil && v > 0 {
		n = v
	}
	for _, name := range []string{"wasm", "cgo", "modernc"} {
		drv, err := pickDriver(name, "NORMAL")
		if err != nil {
			continue // cgo in a build without it
		}
		for _, kind := range []string{"stored", "new"} {
			for _, conn := range []string{"held", "released"} {
				b.Run(name+"/"+kind+"/"+conn, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						idleCells(b, drv, kind, conn == "released", n)
					}
				})
			}
		}
	}
}

func idleCells(b *testing.B, drv driver.Driver, kind string, release bool, n int) {
	b.StopTimer()
	dir := b.TempDir()
	released := new(atomic.Int64)
	configure := func(o *cell.Options) {
		o.IdleConnTimeout = -1
		if release {
			o.IdleConnTimeout = 20 * time.Millisecond
			o.Logger = slog.New(releaseCounter{released})
		}
	}
	open := func() *lazyNode {
		d := openDefaultWith(b, dir, "lazy", drv, true, nil, configure)
		ns, err := cell.Register(d.rt, "Lazy", func(ctx context.Context, st *cell.State) (*lazyObj, error) { return &lazyObj{st}, nil })
		if err != nil {
			b.Fatal(err)
		}
		return &lazyNode{rt: d.rt, ns: ns, bucket: d.bucket, shards: d.shards}
	}
	e := open()
	if kind == "stored" {
		for j := 0; j < n; j++ {
			e.call(b, "c"+strconv.Itoa(j), writeCell)
		}
		e.close(b)
		released.Store(0)
		e = open()
	}
	defer e.close(b)
	runtime.GC()
	debug.FreeOSMemory()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rss := rssBytes()
	b.StartTimer()
	for j := 0; j < n; j++ {
		e.call(b, "c"+strconv.Itoa(j), kvGet)
	}
	b.StopTimer()
	if release {
		waitFor(b, "every cell's release", func() bool { return released.Load() >= int64(n) })
	}
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	if got := len(e.rt.ActiveCells()); got != n {
		b.Fatalf("%d cells active, want %d", got, n)
	}
	b.ReportMetric(float64(rssBytes()-rss)/float64(n)/1024, "KiB-rss/cell")
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(n)/1024, "KiB-heap/cell")
}

// BenchmarkReleasedCellCall: the cost of the first call after a cell
// released its connection (Options.IdleConnTimeout), against a call to a
// cell that kept it, in the same run: a read of a stored cell on the
// embedded default. Each "released" iteration waits (timer stopped) until
// the cell has released its connection again.
//
//	go test -run '^$' -bench BenchmarkReleasedCellCall -benchtime 300x ./tests
func BenchmarkReleasedCellCall(b *testing.B) {
	for _, name := range []string{"wasm", "cgo", "modernc"} {
		drv, err := pickDriver(name, "NORMAL")
		if err != nil {
			continue
		}
		for _, conn := range []string{"held", "released"} {
			b.Run(name+"/"+conn, func(b *testing.B) {
				release := conn == "released"
				released := new(atomic.Int64)
				d := openDefaultWith(b, b.TempDir(), "lazy", drv, true, nil, func(o *cell.Options) {
					o.IdleConnTimeout = -1
					if release {
						o.IdleConnTimeout = 2 * time.Millisecond
						o.Logger = slog.New(releaseCounter{released})
					}
				})
				ns, err := cell.Register(d.rt, "Lazy", func(ctx context.Context, st *cell.State) (*lazyObj, error) { return &lazyObj{st}, nil })
				if err != nil {
					b.Fatal(err)
				}
				e := &lazyNode{rt: d.rt, ns: ns, bucket: d.bucket, shards: d.shards}
				defer e.close(b)
				e.call(b, "c", writeCell)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if release {
						b.StopTimer()
						waitFor(b, "the release", func() bool { return released.Load() > int64(i) })
						b.StartTimer()
					}
					if v := e.call(b, "c", sqlGet); v != 42 {
						b.Fatalf("read %d", v)
					}
				}
			})
		}
	}
}
