package main

// Issue 13, item 3: what an idle open cell holds, per driver, on the
// embedded default. Results are in docs/benchmarks.md ("Idle cells").
//
//	CELLB_IDLE_CELLS=500 go test -run '^$' -bench BenchmarkIdleCellsByKind -benchtime 1x ./cmd/cellb

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

// BenchmarkIdleCellsByKind opens N cells with one read each and keeps them open
// and idle, reporting the resident memory (RSS) and Go heap each adds:
// "stored" cells were written before (a database file, reopened), "new"
// cells were never written (the in-memory database lazy activation opens).
// Goals (issue 13): wasm ≤ 100 KiB, cgo ≤ 64 KiB a cell.
func BenchmarkIdleCellsByKind(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("CELLB_IDLE_CELLS")); err == nil && v > 0 {
		n = v
	}
	for _, name := range []string{"wasm", "cgo", "modernc"} {
		drv, err := pickDriver(name, syncPerGroup)
		if err != nil {
			continue // cgo in a build without it
		}
		for _, kind := range []string{"stored", "new"} {
			b.Run(name+"/"+kind, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					idleCells(b, drv, kind, n)
				}
			})
		}
	}
}

func idleCells(b *testing.B, drv driver.Driver, kind string, n int) {
	b.StopTimer()
	dir := b.TempDir()
	e := openLazyWith(b, dir, drv)
	if kind == "stored" {
		for j := 0; j < n; j++ {
			e.call(b, "c"+strconv.Itoa(j), writeCell)
		}
		e.close(b)
		e = openLazyWith(b, dir, drv)
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
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	if got := len(e.rt.ActiveCells()); got != n {
		b.Fatalf("%d cells active, want %d", got, n)
	}
	b.ReportMetric(float64(rssBytes()-rss)/float64(n)/1024, "KiB-rss/cell")
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(n)/1024, "KiB-heap/cell")
}
