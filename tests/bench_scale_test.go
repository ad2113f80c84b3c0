package tests

// Benchmarks of issue 13 (performance at scale), each beside its baseline
// in the same run; written up in docs/benchmarks.md, "Performance at scale
// (issue 13)". Run them all with
//
//	go test -run '^$' -bench 'AckedWrites|Activations|IdleCells|LargeCell|RestoreVsLitestream' -benchtime 1x ./tests
//
// (BenchmarkAckedWrites wants -benchtime 2s or so; the others do their own
// repetitions.)

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// embedded is a runtime as cellb serve runs it without --bucket: the
// given driver, local-primary, the LTX log on a local-files bucket under
// dir (counted).
type embedded struct {
	rt *cell.Runtime
	ns *cell.Namespace[*benchCell]
	s  *countingStore
}

func openEmbedded(b testing.TB, dir string, drv driver.Driver) *embedded {
	b.Helper()
	return openEmbeddedWith(b, dir, drv, nil)
}

// openEmbeddedWith is openEmbedded with configure changing the options.
func openEmbeddedWith(b testing.TB, dir string, drv driver.Driver, configure func(*cell.Options)) *embedded {
	b.Helper()
	var s *countingStore
	d := openDefaultWith(b, dir, "bench", drv, false, func(fs store.Store) store.Store { s = &countingStore{Store: fs}; return s }, configure)
	ns, err := cell.Register(d.rt, "Bench", newBenchCell)
	if err != nil {
		b.Fatal(err)
	}
	return &embedded{d.rt, ns, s}
}

func (e *embedded) close() {
	e.rt.Close(context.Background())
	store.Close(e.s.Store)
}

func embeddedWasm() driver.Driver {
	d, _ := pickDriver("wasm", nodeSync(false, ltxlog.Mode()))
	return d
}

// spread runs op(i) for i in [0, count) from n goroutines.
func spread(count, n int, op func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// BenchmarkActivations: activations per second, with 1 and 8 callers, of
// cells never seen (new) and of cells written before and no longer in
// memory (existing: a fresh runtime over the same files and bucket), on
// the embedded default (wasm, local-primary, LTX log on a local-files
// bucket); each activation is one read-only call. Baseline, same run:
// opening the same number of existing SQLite files with the driver alone
// and reading a row from each (raw-open). Also the bucket's requests and
// bytes per activation. CELLB_BENCH_ACTIVATIONS cells per round (1,000).
func BenchmarkActivations(b *testing.B) {
	count := envInt("CELLB_BENCH_ACTIVATIONS", 1000)
	ctx := context.Background()
	name := func(i int) string { return "c" + strconv.Itoa(i) }
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("raw-open/callers=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			d := wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=FULL"))
			for i := range count {
				c, err := d.Open(ctx, driver.Config{Path: filepath.Join(dir, name(i)+".db")})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Exec(ctx, "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO n VALUES (1, 0)"); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			var elapsed time.Duration
			for range b.N {
				conns := make([]driver.Conn, count)
				start := time.Now()
				err := spread(count, n, func(i int) error {
					c, err := d.Open(ctx, driver.Config{Path: filepath.Join(dir, name(i)+".db")})
					if err != nil {
						return err
					}
					conns[i] = c
					return directRead(ctx, c)
				})
				elapsed += time.Since(start)
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(count*b.N)/elapsed.Seconds(), "activations/s")
		})
		for _, kind := range []string{"new", "existing"} {
			b.Run(fmt.Sprintf("%s/callers=%d", kind, n), func(b *testing.B) {
				var elapsed time.Duration
				var cost bucketCost
				for range b.N {
					dir := b.TempDir()
					if kind == "existing" {
						e := openEmbedded(b, dir, embeddedWasm())
						if err := spread(count, 8, func(i int) error {
							_, err := cell.Call(ctx, e.ns.Get(e.ns.IDFromName(name(i))), benchWrite)
							return err
						}); err != nil {
							b.Fatal(err)
						}
						e.close()
					}
					e := openEmbedded(b, dir, embeddedWasm())
					before := e.s.snapshot()
					start := time.Now()
					err := spread(count, n, func(i int) error {
						_, err := cell.Call(ctx, e.ns.Get(e.ns.IDFromName(name(i))), benchRead)
						return err
					})
					elapsed += time.Since(start)
					after := e.s.snapshot()
					cost = cost.plus(after.since(before))
					if err != nil {
						b.Fatal(err)
					}
					if got := len(e.rt.ActiveCells()); got != count {
						b.Fatalf("%d cells active, want %d", got, count)
					}
					e.close()
				}
				b.ReportMetric(float64(count*b.N)/elapsed.Seconds(), "activations/s")
				cost.report(b, count*b.N, "activation")
			})
		}
	}
}

func (c bucketCost) plus(o bucketCost) bucketCost {
	return bucketCost{c.gets + o.gets, c.puts + o.puts, c.deletes + o.deletes, c.lists + o.lists, c.in + o.in, c.out + o.out}
}

// BenchmarkIdleCells: the memory an idle open cell holds, per driver, on
// the embedded default (local-primary, LTX log on a local-files bucket):
// CELLB_BENCH_IDLE cells (1,000) activated by one write each and left
// open, in a process of its own (TestIdleCellsHelper), so the resident set
// is not blurred by what earlier benchmarks freed; its growth and the live
// Go heap's, per cell. conn=held keeps every connection
// (IdleConnTimeout negative, as before the option existed); conn=released
// measures once every cell has released its connection (IdleConnTimeout
// 20 ms).
func BenchmarkIdleCells(b *testing.B) {
	count := envInt("CELLB_BENCH_IDLE", 1000)
	names := []string{"wasm"}
	for _, d := range cgoTestDrivers() {
		names = append(names, d.Name())
	}
	for _, name := range names {
		for _, conn := range []string{"held", "released"} {
			b.Run("driver="+name+"/conn="+conn, func(b *testing.B) {
				for range b.N {
					cmd := exec.Command(os.Args[0], "-test.run=^TestIdleCellsHelper$", "-test.count=1", "-test.v")
					cmd.Env = append(os.Environ(), "CELLB_IDLE_DRIVER="+name, "CELLB_IDLE_CONN="+conn, "CELLB_IDLE_DIR="+b.TempDir(), fmt.Sprintf("CELLB_BENCH_IDLE=%d", count))
					out, err := cmd.CombinedOutput()
					if err != nil {
						b.Fatalf("helper: %v\n%s", err, out)
					}
					var rss, heap float64
					for _, l := range strings.Split(string(out), "\n") {
						if rest, ok := strings.CutPrefix(l, "IDLE "); ok {
							fmt.Sscan(rest, &rss, &heap)
						}
					}
					b.ReportMetric(rss, "KiB-rss/idle-cell")
					b.ReportMetric(heap, "KiB-heap/idle-cell")
				}
			})
		}
	}
}

// TestIdleCellsHelper is BenchmarkIdleCells' child process; it runs only
// when CELLB_IDLE_DRIVER is set.
func TestIdleCellsHelper(t *testing.T) {
	name := os.Getenv("CELLB_IDLE_DRIVER")
	if name == "" {
		t.Skip("the child process of BenchmarkIdleCells")
	}
	count := envInt("CELLB_BENCH_IDLE", 1000)
	ctx := context.Background()
	d := embeddedWasm()
	if name != "wasm" {
		d = cgoTestDrivers()[0]
	}
	release := os.Getenv("CELLB_IDLE_CONN") == "released"
	released := new(atomic.Int64)
	e := openEmbeddedWith(t, os.Getenv("CELLB_IDLE_DIR"), d, func(o *cell.Options) {
		o.IdleConnTimeout = -1
		if release {
			o.IdleConnTimeout = 20 * time.Millisecond
			o.Logger = slog.New(releaseCounter{released})
		}
	})
	defer e.close()
	// One cell first, so what every process pays once (the compiled
	// SQLite module, the runtime's pools) is not counted per cell.
	if _, err := cell.Call(ctx, e.ns.Get(e.ns.IDFromName("warm")), benchWrite); err != nil {
		t.Fatal(err)
	}
	heapBefore := liveHeap()
	debug.FreeOSMemory() // what the runtime freed counts in neither reading
	rssBefore := rssBytes()
	if err := spread(count, 8, func(i int) error {
		_, err := cell.Call(ctx, e.ns.Get(e.ns.IDFromName("idle"+strconv.Itoa(i))), benchWrite)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if release {
		waitFor(t, "every cell's release", func() bool { return released.Load() >= int64(count)+1 })
	}
	heapAfter := liveHeap()
	debug.FreeOSMemory()
	if got := len(e.rt.ActiveCells()); got != count+1 {
		t.Fatalf("%d cells active, want %d", got, count+1)
	}
	fmt.Printf("IDLE %.1f %.1f\n", float64(rssBytes()-rssBefore)/float64(count)/1024, float64(heapAfter-heapBefore)/float64(count)/1024)
}
