package wasm

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3"
)

// The benchmarks compare, on a file database with synchronous=NORMAL:
//
//   - raw: the library's own API, no CellB code (statements prepared once
//     and reused, as a careful direct user would);
//   - driver: CellB's driver without page capture;
//   - capture: CellB's driver with page capture, including the
//     TakeCommits call after each commit.
//
// Each iteration is a whole workload; run them with -benchtime=1x (see
// docs/benchmarks-drivers-wasm.md).

const (
	bulkRows  = 100_000
	smallTxns = 10_000
	benchSync = "synchronous=NORMAL"
)

func benchPath(b *testing.B) string {
	return filepath.Join(b.TempDir(), "bench.sqlite")
}

// benchModes are the journal modes benchmarked: the default rollback
// journal and WAL.
var benchModes = []JournalMode{DefaultJournalMode, JournalWAL}

// BenchmarkBulkInsert: 100,000 single-row INSERTs in one transaction.
func BenchmarkBulkInsert(b *testing.B) {
	for _, mode := range benchModes {
		b.Run(string(mode), func(b *testing.B) { benchBulk(b, mode) })
	}
}

func benchBulk(b *testing.B, mode JournalMode) {
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db := rawOpen(b, benchPath(b), mode)
			ins := rawPrepare(b, db, "INSERT INTO t(a, b) VALUES (?, ?)")
			b.StartTimer()
			rawExec(b, db, "BEGIN IMMEDIATE")
			for i := range bulkRows {
				ins.BindInt64(1, int64(i))
				ins.BindText(2, "row payload text")
				if err := ins.Exec(); err != nil {
					b.Fatal(err)
				}
			}
			rawExec(b, db, "COMMIT")
			b.StopTimer()
			ins.Close()
			db.Close()
			b.StartTimer()
		}
		b.ReportMetric(perUnit(b, bulkRows), "ns/row")
	})
	for _, capture := range []bool{false, true} {
		b.Run(variant(capture), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				c := benchOpen(b, mode, capture)
				b.StartTimer()
				if err := c.Begin(ctx); err != nil {
					b.Fatal(err)
				}
				for i := range bulkRows {
					if _, err := c.Exec(ctx, "INSERT INTO t(a, b) VALUES (?, ?)", i, "row payload text"); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.Commit(ctx); err != nil {
					b.Fatal(err)
				}
				if capture {
					takeOne(b, c)
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
			b.ReportMetric(perUnit(b, bulkRows), "ns/row")
		})
	}
}

// BenchmarkSmallTransactions: 10,000 transactions of one INSERT each.
func BenchmarkSmallTransactions(b *testing.B) {
	for _, mode := range benchModes {
		b.Run(string(mode), func(b *testing.B) { benchSmall(b, mode) })
	}
}

func benchSmall(b *testing.B, mode JournalMode) {
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db := rawOpen(b, benchPath(b), mode)
			begin := rawPrepare(b, db, "BEGIN IMMEDIATE")
			ins := rawPrepare(b, db, "INSERT INTO t(a, b) VALUES (?, ?)")
			commit := rawPrepare(b, db, "COMMIT")
			b.StartTimer()
			for i := range smallTxns {
				if err := begin.Exec(); err != nil {
					b.Fatal(err)
				}
				ins.BindInt64(1, int64(i))
				ins.BindText(2, "row payload text")
				if err := ins.Exec(); err != nil {
					b.Fatal(err)
				}
				if err := commit.Exec(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			begin.Close()
			ins.Close()
			commit.Close()
			db.Close()
			b.StartTimer()
		}
		b.ReportMetric(perUnit(b, smallTxns)/1e3, "µs/txn")
	})
	for _, capture := range []bool{false, true} {
		b.Run(variant(capture), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				c := benchOpen(b, mode, capture)
				b.StartTimer()
				for i := range smallTxns {
					if err := c.Begin(ctx); err != nil {
						b.Fatal(err)
					}
					if _, err := c.Exec(ctx, "INSERT INTO t(a, b) VALUES (?, ?)", i, "row payload text"); err != nil {
						b.Fatal(err)
					}
					if err := c.Commit(ctx); err != nil {
						b.Fatal(err)
					}
					if capture {
						takeOne(b, c)
					}
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
			b.ReportMetric(perUnit(b, smallTxns)/1e3, "µs/txn")
		})
	}
}

func variant(capture bool) string {
	if capture {
		return "capture"
	}
	return "driver"
}

func perUnit(b *testing.B, units int) float64 {
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(units)
}

func benchOpen(b *testing.B, mode JournalMode, capture bool) *Conn {
	c, err := New(WithJournalMode(mode), WithPragmas(benchSync)).Open(context.Background(), driver.Config{Path: benchPath(b), PageCapture: capture})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(context.Background(), "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)"); err != nil {
		b.Fatal(err)
	}
	if capture {
		takeOne(b, c.(*Conn))
	}
	return c.(*Conn)
}

func takeOne(b *testing.B, c *Conn) {
	commits, err := c.TakeCommits(context.Background())
	if err != nil || len(commits) != 1 {
		b.Fatalf("TakeCommits: %d commits, %v", len(commits), err)
	}
}

// rawOpen opens path with the library alone, with the driver's settings.
func rawOpen(b *testing.B, path string, mode JournalMode) *sqlite3.Conn {
	db, err := sqlite3.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := db.BusyTimeout(5 * time.Second); err != nil {
		b.Fatal(err)
	}
	rawExec(b, db, fmt.Sprintf("PRAGMA journal_mode=%s; PRAGMA %s", mode, benchSync))
	rawExec(b, db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)")
	return db
}

func rawExec(b *testing.B, db *sqlite3.Conn, sql string) {
	if err := db.Exec(sql); err != nil {
		b.Fatal(err)
	}
}

func rawPrepare(b *testing.B, db *sqlite3.Conn, sql string) *sqlite3.Stmt {
	s, _, err := db.Prepare(sql)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// On a shared, busy machine, consecutive benchmarks see different loads.
// The interleaved benchmarks run the three variants in turns, a slice of
// the workload each, so they share the same conditions; they report each
// variant's time per unit and its ratio to raw.

// txnRunner runs transaction i of a workload.
type txnRunner struct {
	name  string
	run   func(i int)
	close func()
	spent time.Duration
}

func BenchmarkSmallTransactionsInterleaved(b *testing.B) {
	for _, mode := range benchModes {
		b.Run(string(mode), func(b *testing.B) {
			const rounds = 20
			for b.Loop() {
				b.StopTimer()
				runners := []*txnRunner{rawSmall(b, mode), driverSmall(b, mode, false), driverSmall(b, mode, true)}
				for r := range rounds {
					for _, x := range runners {
						start := time.Now()
						for i := r * smallTxns / rounds; i < (r+1)*smallTxns/rounds; i++ {
							x.run(i)
						}
						x.spent += time.Since(start)
					}
				}
				for _, x := range runners {
					x.close()
				}
				reportInterleaved(b, runners, smallTxns, "µs/txn", 1e3)
				b.StartTimer()
			}
		})
	}
}

func BenchmarkBulkInsertInterleaved(b *testing.B) {
	for _, mode := range benchModes {
		b.Run(string(mode), func(b *testing.B) {
			const rounds = 3
			for b.Loop() {
				b.StopTimer()
				runners := []*txnRunner{{name: "raw"}, {name: "driver"}, {name: "capture"}}
				for range rounds {
					for k, x := range runners {
						run, closeFn := bulkOnce(b, mode, k)
						start := time.Now()
						run()
						x.spent += time.Since(start)
						closeFn()
					}
				}
				reportInterleaved(b, runners, rounds*bulkRows, "ns/row", 1)
				b.StartTimer()
			}
		})
	}
}

func reportInterleaved(b *testing.B, runners []*txnRunner, units int, unit string, scale float64) {
	raw := runners[0].spent
	for _, x := range runners {
		b.ReportMetric(float64(x.spent.Nanoseconds())/float64(units)/scale, x.name+"-"+unit)
		if x != runners[0] {
			b.ReportMetric(float64(x.spent)/float64(raw), x.name+"/raw")
		}
	}
}

func rawSmall(b *testing.B, mode JournalMode) *txnRunner {
	db := rawOpen(b, benchPath(b), mode)
	begin := rawPrepare(b, db, "BEGIN IMMEDIATE")
	ins := rawPrepare(b, db, "INSERT INTO t(a, b) VALUES (?, ?)")
	commit := rawPrepare(b, db, "COMMIT")
	return &txnRunner{
		name: "raw",
		run: func(i int) {
			if err := begin.Exec(); err != nil {
				b.Fatal(err)
			}
			ins.BindInt64(1, int64(i))
			ins.BindText(2, "row payload text")
			if err := ins.Exec(); err != nil {
				b.Fatal(err)
			}
			if err := commit.Exec(); err != nil {
				b.Fatal(err)
			}
		},
		close: func() { begin.Close(); ins.Close(); commit.Close(); db.Close() },
	}
}

func driverSmall(b *testing.B, mode JournalMode, capture bool) *txnRunner {
	ctx := context.Background()
	c := benchOpen(b, mode, capture)
	return &txnRunner{
		name: variant(capture),
		run: func(i int) {
			if err := c.Begin(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Exec(ctx, "INSERT INTO t(a, b) VALUES (?, ?)", i, "row payload text"); err != nil {
				b.Fatal(err)
			}
			if err := c.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			if capture {
				takeOne(b, c)
			}
		},
		close: func() { c.Close() },
	}
}

// bulkOnce prepares one bulk transaction for variant k (0 raw, 1 driver,
// 2 capture) on a fresh database.
func bulkOnce(b *testing.B, mode JournalMode, k int) (run, closeFn func()) {
	ctx := context.Background()
	if k == 0 {
		db := rawOpen(b, benchPath(b), mode)
		ins := rawPrepare(b, db, "INSERT INTO t(a, b) VALUES (?, ?)")
		return func() {
			rawExec(b, db, "BEGIN IMMEDIATE")
			for i := range bulkRows {
				ins.BindInt64(1, int64(i))
				ins.BindText(2, "row payload text")
				if err := ins.Exec(); err != nil {
					b.Fatal(err)
				}
			}
			rawExec(b, db, "COMMIT")
		}, func() { ins.Close(); db.Close() }
	}
	capture := k == 2
	c := benchOpen(b, mode, capture)
	return func() {
		if err := c.Begin(ctx); err != nil {
			b.Fatal(err)
		}
		for i := range bulkRows {
			if _, err := c.Exec(ctx, "INSERT INTO t(a, b) VALUES (?, ?)", i, "row payload text"); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		if capture {
			takeOne(b, c)
		}
	}, func() { c.Close() }
}
