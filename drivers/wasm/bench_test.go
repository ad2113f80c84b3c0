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
	spent time.Duration // wall clock
	cpu   time.Duration // process CPU time
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
						start, cpu := time.Now(), processCPU()
						for i := r * smallTxns / rounds; i < (r+1)*smallTxns/rounds; i++ {
							x.run(i)
						}
						x.spent += time.Since(start)
						x.cpu += processCPU() - cpu
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
			const chunks = 100
			for b.Loop() {
				b.StopTimer()
				// The three transactions are open at once, each on its own
				// database; their rows go in by turns, a chunk at a time.
				runners := []*bulkRunner{rawBulk(b, mode), driverBulk(b, mode, false), driverBulk(b, mode, true)}
				for _, x := range runners {
					x.timed(x.begin)
				}
				for k := range chunks {
					for _, x := range runners {
						x.timed(func() {
							for i := k * bulkRows / chunks; i < (k+1)*bulkRows/chunks; i++ {
								x.insert(i)
							}
						})
					}
				}
				for _, x := range runners {
					x.timed(x.commit)
					x.close()
				}
				reportInterleaved(b, []*txnRunner{&runners[0].txnRunner, &runners[1].txnRunner, &runners[2].txnRunner}, bulkRows, "ns/row", 1)
				b.StartTimer()
			}
		})
	}
}

// bulkRunner is one variant of the bulk workload.
type bulkRunner struct {
	txnRunner
	begin, commit func()
	insert        func(i int)
}

func (x *bulkRunner) timed(fn func()) {
	start, cpu := time.Now(), processCPU()
	fn()
	x.spent += time.Since(start)
	x.cpu += processCPU() - cpu
}

func rawBulk(b *testing.B, mode JournalMode) *bulkRunner {
	db := rawOpen(b, benchPath(b), mode)
	ins := rawPrepare(b, db, "INSERT INTO t(a, b) VALUES (?, ?)")
	return &bulkRunner{
		txnRunner: txnRunner{name: "raw", close: func() { ins.Close(); db.Close() }},
		begin:     func() { rawExec(b, db, "BEGIN IMMEDIATE") },
		commit:    func() { rawExec(b, db, "COMMIT") },
		insert: func(i int) {
			ins.BindInt64(1, int64(i))
			ins.BindText(2, "row payload text")
			if err := ins.Exec(); err != nil {
				b.Fatal(err)
			}
		},
	}
}

func driverBulk(b *testing.B, mode JournalMode, capture bool) *bulkRunner {
	ctx := context.Background()
	c := benchOpen(b, mode, capture)
	return &bulkRunner{
		txnRunner: txnRunner{name: variant(capture), close: func() { c.Close() }},
		begin: func() {
			if err := c.Begin(ctx); err != nil {
				b.Fatal(err)
			}
		},
		commit: func() {
			if err := c.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			if capture {
				takeOne(b, c)
			}
		},
		insert: func(i int) {
			if _, err := c.Exec(ctx, "INSERT INTO t(a, b) VALUES (?, ?)", i, "row payload text"); err != nil {
				b.Fatal(err)
			}
		},
	}
}

// reportInterleaved reports, per variant, wall-clock time per unit and its
// ratio to raw, and the same for CPU time ("cpu-" metrics), which a busy
// machine disturbs far less.
func reportInterleaved(b *testing.B, runners []*txnRunner, units int, unit string, scale float64) {
	raw := runners[0]
	for _, x := range runners {
		b.ReportMetric(float64(x.spent.Nanoseconds())/float64(units)/scale, x.name+"-"+unit)
		if x.cpu > 0 {
			b.ReportMetric(float64(x.cpu.Nanoseconds())/float64(units)/scale, "cpu-"+x.name+"-"+unit)
		}
		if x != raw {
			b.ReportMetric(float64(x.spent)/float64(raw.spent), x.name+"/raw")
			if raw.cpu > 0 {
				b.ReportMetric(float64(x.cpu)/float64(raw.cpu), "cpu-"+x.name+"/raw")
			}
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

// BenchmarkOpenExisting: opening an existing WAL-mode file with page
// capture and reading a row, the connection kept open like an active
// cell's until the timer stops (what activating an existing cell costs the
// driver). Baseline in the same run (raw): the library opening the same
// kind of file and reading the row, no CellB code.
func BenchmarkOpenExisting(b *testing.B) {
	ctx := context.Background()
	prep := func(b *testing.B, d *Driver) []string {
		dir := b.TempDir()
		paths := make([]string, b.N)
		for i := range paths {
			paths[i] = filepath.Join(dir, fmt.Sprintf("c%d.db", i))
			c, err := d.Open(ctx, driver.Config{Path: paths[i], PageCapture: true})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Exec(ctx, "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO n VALUES (1, 0)"); err != nil {
				b.Fatal(err)
			}
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
		return paths
	}
	b.Run("raw", func(b *testing.B) {
		paths := prep(b, New(WithJournalMode(JournalWAL), WithPragmas(benchSync)))
		conns := make([]*sqlite3.Conn, 0, b.N)
		b.ResetTimer()
		cpu := processCPU()
		for _, p := range paths {
			db, err := sqlite3.Open("file:" + p)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, db)
			if err := db.Exec("PRAGMA " + benchSync); err != nil {
				b.Fatal(err)
			}
			s, _, err := db.Prepare("SELECT v FROM n WHERE id = 1")
			if err != nil {
				b.Fatal(err)
			}
			for s.Step() {
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		for _, db := range conns {
			db.Close()
		}
	})
	for _, excl := range []bool{false, true} {
		name := "driver"
		opts := []Option{WithJournalMode(JournalWAL), WithPragmas(benchSync)}
		if excl {
			name, opts = "driver-exclusive", append(opts, WithExclusiveLocking())
		}
		b.Run(name, func(b *testing.B) {
			benchOpenExisting(b, New(opts...), prep)
		})
	}
}

func benchOpenExisting(b *testing.B, d *Driver, prep func(*testing.B, *Driver) []string) {
	ctx := context.Background()
	{
		paths := prep(b, d)
		conns := make([]driver.Conn, 0, b.N)
		b.ResetTimer()
		cpu := processCPU()
		for _, p := range paths {
			c, err := d.Open(ctx, driver.Config{Path: p, PageCapture: true})
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
			rows, err := c.Query(ctx, "SELECT v FROM n WHERE id = 1")
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		for _, c := range conns {
			c.Close()
		}
	}
}
