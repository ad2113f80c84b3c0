package tests

// Benchmarks of the runtime and the LTX log against baselines measured in
// the same run. Results are written up in docs/benchmarks.md; run with
//
//	go test -run '^$' -bench 'Cell|Acked|Activate|Restore' -benchtime 3s ./tests

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

// benchCell is a one-row counter kept in SQL, the same statement the
// direct baselines run.
type benchCell struct{ st *cell.State }

func newBenchCell(ctx context.Context, st *cell.State) (*benchCell, error) {
	_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT OR IGNORE INTO n VALUES (1, 0)")
	return &benchCell{st}, err
}

func benchWrite(ctx context.Context, c *benchCell) (int64, error) {
	_, err := c.st.SQL().Exec(ctx, "UPDATE n SET v = v + 1 WHERE id = 1")
	return 0, err
}

func benchRead(ctx context.Context, c *benchCell) (int64, error) {
	var v int64
	err := c.st.SQL().QueryRow(ctx, "SELECT v FROM n WHERE id = 1").Scan(&v)
	return v, err
}

func benchRuntime(b *testing.B, d driver.Driver, log durability.Log, s store.Store) (*cell.Runtime, *cell.Namespace[*benchCell]) {
	b.Helper()
	rt, err := cell.New(cell.Options{ScriptName: "bench", Driver: d, DataDir: b.TempDir(), Log: log, Logger: quietLogger(), IdleTimeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	ns, err := cell.Register(rt, "Bench", newBenchCell)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(context.Background()) })
	return rt, ns
}

// directConn is the same table used through the driver alone.
func directConn(b *testing.B, d driver.Driver) driver.Conn {
	b.Helper()
	ctx := context.Background()
	c, err := d.Open(ctx, driver.Config{Path: filepath.Join(b.TempDir(), "direct.db")})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO n VALUES (1, 0)"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func directWrite(ctx context.Context, c driver.Conn) error {
	if err := c.Begin(ctx); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, "UPDATE n SET v = v + 1 WHERE id = 1"); err != nil {
		c.Rollback(ctx)
		return err
	}
	return c.Commit(ctx)
}

func directRead(ctx context.Context, c driver.Conn) error {
	rows, err := c.Query(ctx, "SELECT v FROM n WHERE id = 1")
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Close()
}

// callers runs op from n goroutines (n = 1 or 64) for b.N operations in all.
func callers(b *testing.B, n int, op func() error) {
	b.Helper()
	if n == 1 {
		// One caller's waits, for their tail: a write held behind other
		// work (a compaction, say) shows in the 99th percentile and the
		// longest wait, not in the rate.
		waits := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := op(); err != nil {
				b.Fatal(err)
			}
			waits = append(waits, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(waits)
		b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "max-ms")
	} else {
		b.SetParallelism((n + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkCell: requests to one warm cell, read-only and single-row
// writes, with 1 and 64 callers, beside the same SQL on the driver with no
// runtime. The runtime uses the local-commit log here: this isolates the
// runtime's own cost (gates, implicit transaction, output gate).
func BenchmarkCell(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("write/direct/callers=%d", n), func(b *testing.B) {
			c := directConn(b, wasm.New())
			var mu sync.Mutex
			callers(b, n, func() error { mu.Lock(); defer mu.Unlock(); return directWrite(ctx, c) })
		})
		b.Run(fmt.Sprintf("write/runtime/callers=%d", n), func(b *testing.B) {
			_, ns := benchRuntime(b, wasm.New(), durability.Local{}, nil)
			stub := ns.Get(ns.IDFromName("warm"))
			callers(b, n, func() error { _, err := cell.Call(ctx, stub, benchWrite); return err })
		})
		b.Run(fmt.Sprintf("read/direct/callers=%d", n), func(b *testing.B) {
			c := directConn(b, wasm.New())
			var mu sync.Mutex
			callers(b, n, func() error { mu.Lock(); defer mu.Unlock(); return directRead(ctx, c) })
		})
		b.Run(fmt.Sprintf("read/direct-tx/callers=%d", n), func(b *testing.B) {
			// The same read inside BEGIN IMMEDIATE ... COMMIT, as a turn
			// runs it: what SQLite alone charges for the implicit
			// transaction.
			c := directConn(b, wasm.New())
			var mu sync.Mutex
			callers(b, n, func() error {
				mu.Lock()
				defer mu.Unlock()
				if err := c.Begin(ctx); err != nil {
					return err
				}
				if err := directRead(ctx, c); err != nil {
					c.Rollback(ctx)
					return err
				}
				return c.Commit(ctx)
			})
		})
		b.Run(fmt.Sprintf("read/runtime/callers=%d", n), func(b *testing.B) {
			_, ns := benchRuntime(b, wasm.New(), durability.Local{}, nil)
			stub := ns.Get(ns.IDFromName("warm"))
			callers(b, n, func() error { _, err := cell.Call(ctx, stub, benchRead); return err })
		})
	}
}

// BenchmarkAckedWrites: writes acknowledged durable, to one cell, with 1,
// 4, 16 and 64 callers, in each mode, beside raw SQLite on the same driver
// committing each write with synchronous=FULL in WAL mode (one sync per
// commit, the disk's floor for a write that is durable when it returns):
//
//   - local: the runtime with the local-commit log (durability.Local),
//     SQLite syncing every commit;
//   - local-primary: the LTX log on the local-files bucket with shard
//     locks, as cellb serve runs it without --bucket (SingleHost): SQLite
//     leaves commits unsynced and nothing syncs the local file per commit;
//     a restart mark, recorded once per activation beside the first
//     upload, sends the cell to the bucket after a machine restart;
//   - local-primary-shard-sync: local-primary on a system that names no
//     boot, as SingleHost ran before the restart mark: the log syncs the
//     local file once per group commit, beside the upload;
//   - local-primary-sync-group: the same without ownership (lease.None),
//     as NoOwnership runs it;
//   - fleet: the LTX log with the bucket winning (fleet ownership): no
//     local sync, a reply waits for the bucket;
//   - embedded-nodelog and embedded-percell: the embedded default built
//     through host.New (benchEmbedded), with the process's node log (one
//     bundle per flush, tiered into the cell's prefix every 64 rows) and
//     with per-cell uploads (host.SingleHostConfig.PerCellLog).
//
// local-primary-sync-each is local-primary as it was before issue 13,
// SQLite syncing every commit (the log's one sync per group then finds
// little to flush). ceiling-no-sync is no mode: the runtime with nothing made durable, the
// most writes one cell's turns can make on this machine.
//
// The bucket modes also report the bucket's bytes and requests per
// acknowledged write. scripts/bench-chart.sh draws docs/benchmarks-writes.svg
// from this benchmark's output.
func BenchmarkAckedWrites(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("raw-sqlite-full/callers=%d", n), func(b *testing.B) {
			c := directConn(b, wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=FULL")))
			var mu sync.Mutex
			callers(b, n, func() error { mu.Lock(); defer mu.Unlock(); return directWrite(ctx, c) })
		})
		b.Run(fmt.Sprintf("local/callers=%d", n), func(b *testing.B) {
			drv, _ := pickDriver("wasm", nodeSync(false, durability.Mode{}))
			_, ns := benchRuntime(b, drv, durability.Local{}, nil)
			stub := ns.Get(ns.IDFromName("acked"))
			callers(b, n, func() error { _, err := cell.Call(ctx, stub, benchWrite); return err })
		})
		b.Run(fmt.Sprintf("ceiling-no-sync/callers=%d", n), func(b *testing.B) {
			// Not a mode: the runtime with nothing durable at all (no
			// sync, no bucket), the most one cell's turns can do here.
			drv, _ := pickDriver("wasm", "OFF")
			_, ns := benchRuntime(b, drv, durability.Local{}, nil)
			stub := ns.Get(ns.IDFromName("acked"))
			callers(b, n, func() error { _, err := cell.Call(ctx, stub, benchWrite); return err })
		})
		for _, mode := range []string{"local-primary", "local-primary-sync-group", "local-primary-shard-sync", "local-primary-sync-each", "fleet", "fleet-nodelog"} {
			fleetMode := strings.HasPrefix(mode, "fleet")
			b.Run(fmt.Sprintf("%s/callers=%d", mode, n), func(b *testing.B) {
				fs, err := fsstore.Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close(fs)
				s := &countingStore{Store: fs}
				lopts := ltxlog.Options{Store: s, Logger: quietLogger()}
				cs := nodeSync(fleetMode, ltxlog.Mode())
				if mode == "local-primary-sync-each" {
					cs = "FULL" // as before issue 13: SQLite syncs every commit
				}
				drv, _ := pickDriver("wasm", cs)
				opts := cell.Options{ScriptName: "bench", Driver: drv, DataDir: b.TempDir(), Logger: quietLogger(), IdleTimeout: -1}
				if mode == "local-primary-shard-sync" {
					// No boot identity: the per-group sync SingleHost made
					// before the restart mark, and still makes off Linux.
					opts.BootID = func() (string, error) { return "", errors.New("no boot identity") }
				}
				if mode == "local-primary" || mode == "local-primary-shard-sync" {
					sh, err := shard.Open(b.TempDir(), 16)
					if err != nil {
						b.Fatal(err)
					}
					defer sh.Close()
					opts.Lease = sh
				}
				if fleetMode {
					nodeLog := mode == "fleet-nodelog"
					node, err := fleet.Join(ctx, fleet.Options{Store: s, Logger: quietLogger(), NodeLog: nodeLog})
					if err != nil {
						b.Fatal(err)
					}
					defer node.Close(ctx)
					opts.Lease = node
					if nodeLog {
						nl, err := nodelog.New(nodelog.Options{Store: s, Node: node.ID(), Generation: node.Generation(), Confirmer: node, Logger: quietLogger()})
						if err != nil {
							b.Fatal(err)
						}
						defer nl.Close(ctx, true)
						lopts.NodeLog = nl
					}
				}
				lg, _ := ltxlog.New(lopts)
				opts.Log = lg
				rt, err := cell.New(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close(ctx)
				ns, err := cell.Register(rt, "Bench", newBenchCell)
				if err != nil {
					b.Fatal(err)
				}
				stub := ns.Get(ns.IDFromName("acked"))
				if _, err := cell.Call(ctx, stub, benchWrite); err != nil { // activation, snapshot
					b.Fatal(err)
				}
				before := s.snapshot()
				callers(b, n, func() error { _, err := cell.Call(ctx, stub, benchWrite); return err })
				s.snapshot().since(before).report(b, b.N, "write")
			})
		}
		for _, mode := range []string{"embedded-nodelog", "embedded-percell"} {
			b.Run(fmt.Sprintf("%s/callers=%d", mode, n), func(b *testing.B) {
				benchEmbedded(b, n, mode == "embedded-percell")
			})
		}
	}
}

// benchEmbedded is BenchmarkAckedWrites on a node built by host.New as
// cellb serve builds the embedded default (single host, the LTX mode on a
// local-files bucket, the wasm driver at host.Synchronous's level, the
// default retention), with the process's node log or, with perCell, each
// cell uploading its own files.
func benchEmbedded(b *testing.B, n int, perCell bool) {
	ctx := context.Background()
	fs, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close(fs)
	s := &countingStore{Store: fs}
	mode := ltxlog.Mode()
	drv, _ := pickDriver("wasm", host.Synchronous(host.SingleHost, mode))
	var ns *cell.Namespace[*benchCell]
	h, err := host.New(ctx, host.Config{
		Driver: drv, DataDir: b.TempDir(), Bucket: s, Mode: mode, Retention: ltxlog.DefaultRetention,
		Ownership: host.SingleHost, SingleHost: host.SingleHostConfig{PerCellLog: perCell},
		ScriptName: "bench", IdleTimeout: -1, Logger: quietLogger(),
		Classes: func(su *host.Setup) (err error) {
			ns, err = cell.Register(su.Runtime, "Bench", newBenchCell)
			return err
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	if (h.NodeLog() == nil) != perCell {
		b.Fatalf("node log %v with PerCellLog %v", h.NodeLog() != nil, perCell)
	}
	stub := ns.Get(ns.IDFromName("acked"))
	if _, err := cell.Call(ctx, stub, benchWrite); err != nil { // activation, snapshot
		b.Fatal(err)
	}
	before := s.snapshot()
	callers(b, n, func() error { _, err := cell.Call(ctx, stub, benchWrite); return err })
	s.snapshot().since(before).report(b, b.N, "write")
}

// BenchmarkActivate: activating many cells (each opens its database and
// runs its constructor) and keeping them idle in memory.
func BenchmarkActivate(b *testing.B) {
	count := 10000
	if v, err := strconv.Atoi(os.Getenv("CELLB_BENCH_CELLS")); err == nil && v > 0 {
		count = v
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// The driver's default rollback journal keeps two descriptors per
		// open cell; WAL mode (as cellb serve runs it) keeps three, which
		// 10,000 open cells would not fit under this machine's limit of
		// 20,000 (see docs/benchmarks.md).
		rt, ns := benchRuntime(b, wasm.New(), durability.Local{}, nil)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		rssBefore := rssBytes()
		b.StartTimer()
		start := time.Now()
		for j := 0; j < count; j++ {
			if _, err := cell.Call(ctx, ns.Get(ns.IDFromName("c"+strconv.Itoa(j))), benchRead); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if got := len(rt.ActiveCells()); got != count {
			b.Fatalf("%d cells active, want %d", got, count)
		}
		b.ReportMetric(float64(elapsed.Microseconds())/float64(count), "µs/activation")
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(count)/1024, "KiB-heap/idle-cell")
		b.ReportMetric(float64(rssBytes()-rssBefore)/float64(count)/1024, "KiB-rss/idle-cell")
		b.ReportMetric(float64(count), "cells")
		rt.Close(ctx)
	}
}

// BenchmarkRestore100MiB: restoring a 100 MiB cell from the local-files
// bucket to a file, beside copying a 100 MiB file (with fsync).
func BenchmarkRestore100MiB(b *testing.B) {
	const size = 100 << 20
	const pageSize = 4096
	ctx := context.Background()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bucket"), 0o755); err != nil {
		b.Fatal(err)
	}
	s, err := fsstore.Open(filepath.Join(dir, "bucket"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close(s)
	// A realistic image: half random (incompressible), half zeros, laid out
	// as a snapshot plus a few deltas.
	img := make([]byte, size)
	for off := 0; off < size; off += 2 * pageSize {
		rand.Read(img[off : off+pageSize])
	}
	copy(img, []byte("SQLite format 3\x00"))
	pages := make([]driver.Page, 0, size/pageSize)
	lock := ltx.LockPgno(pageSize)
	for pg := uint32(1); pg <= size/pageSize; pg++ {
		if pg != lock {
			pages = append(pages, driver.Page{Pgno: pg, Data: img[int(pg-1)*pageSize : int(pg)*pageSize]})
		}
	}
	data, err := ltx.Encode(ltx.Header{PageSize: pageSize, Commit: size / pageSize, MinTXID: 1, MaxTXID: 1, Timestamp: 1}, pages)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Put(ctx, ltx.Key("Big:x", 1, 1, 1, 1), data, store.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	for t := ltx.TXID(2); t <= 5; t++ {
		delta, _ := ltx.Encode(ltx.Header{PageSize: pageSize, Commit: size / pageSize, MinTXID: t, MaxTXID: t, Timestamp: 2}, pages[100:110])
		s.Put(ctx, ltx.Key("Big:x", 1, 0, t, t), delta, store.PutOptions{})
	}
	src := filepath.Join(dir, "src.db")
	if err := os.WriteFile(src, img, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("copy-file", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			in, _ := os.Open(src)
			out, _ := os.Create(filepath.Join(dir, "copy.db"))
			if _, err := io.Copy(out, in); err != nil {
				b.Fatal(err)
			}
			out.Sync()
			out.Close()
			in.Close()
		}
	})
	b.Run("cellb-restore", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			// What `cellb restore` does: decode straight into the file.
			if _, _, err := ltxlog.Mode().RestoreFile(ctx, s, "Big:x", durability.RestoreRequest{}, filepath.Join(dir, "restored.db")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// rssBytes is the process's resident set size (Linux), 0 elsewhere.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	fmt.Sscan(string(data), &size, &resident)
	return resident * int64(os.Getpagesize())
}
