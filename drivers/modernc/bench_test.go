package modernc_test

// Benchmarks: 100,000 inserts in one transaction and 10,000 single-row
// transactions on a file database (WAL, synchronous=NORMAL,
// locking_mode=EXCLUSIVE), through CellB's driver with and without page
// capture (with capture, TakeCommits runs after every commit and the pages
// are released, as the durability log releases them), beside
// modernc.org/sqlite used directly through database/sql with the same SQL
// and pragmas. Besides wall time per transaction (or row), each reports the
// process's CPU time (user + system) per transaction, which other programs
// on a busy machine disturb far less. Run:
//
//	go test -run '^$' -bench 'BulkInsert|SmallTransactions' -benchtime 5x github.com/cellb/cellb/drivers/modernc

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/modernc"
	_ "modernc.org/sqlite" // the database/sql baseline
)

const (
	bulkRows  = 100_000
	smallTxns = 10_000
	schema    = "CREATE TABLE t(k INTEGER PRIMARY KEY, n INTEGER, s TEXT)"
	insertSQL = "INSERT INTO t(n, s) VALUES (?, ?)"
	payload   = "a short text payload"
)

// rawPragmas are the settings CellB's driver applies to a file database.
var rawPragmas = []string{
	"PRAGMA locking_mode=EXCLUSIVE",
	"PRAGMA journal_mode=WAL",
	"PRAGMA synchronous=NORMAL",
}

// workload is what one benchmark iteration does on an open database.
type workload func(b *testing.B, w writer)

// timed runs work and adds the CPU time it used to *cpu.
func timed(b *testing.B, w writer, work workload, cpu *time.Duration) {
	start := cpuTime()
	work(b, w)
	*cpu += cpuTime() - start
}

// writer is the minimal surface both sides offer.
type writer interface {
	begin() error
	insert(i int) error
	commit() error
}

type cellbWriter struct {
	ctx  context.Context
	conn driver.Conn
	pc   driver.PageCapturer // nil without capture
}

func (w *cellbWriter) begin() error { return w.conn.Begin(w.ctx) }
func (w *cellbWriter) insert(i int) error {
	_, err := w.conn.Exec(w.ctx, insertSQL, i, payload)
	return err
}

func (w *cellbWriter) commit() error {
	if err := w.conn.Commit(w.ctx); err != nil {
		return err
	}
	if w.pc != nil {
		commits, err := w.pc.TakeCommits(w.ctx)
		if err == nil && len(commits) != 1 {
			panic("expected exactly one captured commit")
		}
		for i := range commits {
			commits[i].Release() // as the durability log does once it encoded them
		}
		return err
	}
	return nil
}

type rawWriter struct {
	ctx      context.Context
	conn     *sql.Conn
	prepared bool
	stmt     *sql.Stmt
}

func (w *rawWriter) begin() error {
	_, err := w.conn.ExecContext(w.ctx, "BEGIN IMMEDIATE")
	return err
}

func (w *rawWriter) insert(i int) error {
	var err error
	if w.prepared {
		_, err = w.stmt.ExecContext(w.ctx, i, payload)
	} else {
		_, err = w.conn.ExecContext(w.ctx, insertSQL, i, payload)
	}
	return err
}

func (w *rawWriter) commit() error {
	_, err := w.conn.ExecContext(w.ctx, "COMMIT")
	return err
}

func bulk(b *testing.B, w writer) {
	if err := w.begin(); err != nil {
		b.Fatal(err)
	}
	for i := range bulkRows {
		if err := w.insert(i); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.commit(); err != nil {
		b.Fatal(err)
	}
}

func small(b *testing.B, w writer) {
	for i := range smallTxns {
		if err := w.begin(); err != nil {
			b.Fatal(err)
		}
		if err := w.insert(i); err != nil {
			b.Fatal(err)
		}
		if err := w.commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// openCellBWriter opens a fresh database at path through CellB's driver,
// creates the table and, with capture, takes the commits that made it.
func openCellBWriter(b *testing.B, d driver.Driver, path string, capture bool) *cellbWriter {
	ctx := context.Background()
	conn, err := d.Open(ctx, driver.Config{Path: path, PageCapture: capture})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, schema); err != nil {
		b.Fatal(err)
	}
	w := &cellbWriter{ctx: ctx, conn: conn}
	if capture {
		w.pc = conn.(driver.PageCapturer)
		if _, err := w.pc.TakeCommits(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

func runCellB(b *testing.B, capture bool, work workload) (cpu time.Duration) {
	d := modernc.New(modernc.Options{Synchronous: "NORMAL"})
	for b.Loop() {
		b.StopTimer()
		w := openCellBWriter(b, d, filepath.Join(b.TempDir(), "bench.db"), capture)
		b.StartTimer()
		timed(b, w, work, &cpu)
		b.StopTimer()
		if err := w.conn.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	return cpu
}

func runRaw(b *testing.B, prepared bool, work workload) (cpu time.Duration) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		conn, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range append(rawPragmas, schema) {
			if _, err := conn.ExecContext(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
		w := &rawWriter{ctx: ctx, conn: conn, prepared: prepared}
		if prepared {
			if w.stmt, err = conn.PrepareContext(ctx, insertSQL); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		timed(b, w, work, &cpu)
		b.StopTimer()
		if w.stmt != nil {
			w.stmt.Close()
		}
		conn.Close()
		db.Close()
		b.StartTimer()
	}
	return cpu
}

func benchAll(b *testing.B, work workload, perOp int, unit string) {
	report := func(b *testing.B, cpu time.Duration) {
		per := float64(b.N) * float64(perOp) * 1e3
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "µs/"+unit)
		b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-µs/"+unit)
	}
	b.Run("raw", func(b *testing.B) { report(b, runRaw(b, false, work)) })
	b.Run("raw-prepared", func(b *testing.B) { report(b, runRaw(b, true, work)) })
	b.Run("cellb", func(b *testing.B) { report(b, runCellB(b, false, work)) })
	b.Run("cellb-capture", func(b *testing.B) { report(b, runCellB(b, true, work)) })
}

// BenchmarkBulkInsert is 100,000 inserts in one transaction per op.
func BenchmarkBulkInsert(b *testing.B) { benchAll(b, bulk, bulkRows, "row") }

// BenchmarkSmallTransactions is 10,000 single-row transactions per op.
func BenchmarkSmallTransactions(b *testing.B) { benchAll(b, small, smallTxns, "txn") }

// BenchmarkSmallTransactionsInterleaved runs single-row transactions on
// three open databases (raw-prepared, cellb, cellb-capture) in alternating
// blocks, rotating which goes first, so that a busy machine slows all three
// alike; it reports each one's wall and CPU time per transaction and the
// capture overhead. One iteration is one block per variant.
func BenchmarkSmallTransactionsInterleaved(b *testing.B) {
	const blockTxs = 200
	ctx := context.Background()
	dir := b.TempDir()

	db, err := sql.Open("sqlite", filepath.Join(dir, "raw.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rawConn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer rawConn.Close()
	for _, p := range append(rawPragmas, schema) {
		if _, err := rawConn.ExecContext(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	raw := &rawWriter{ctx: ctx, conn: rawConn, prepared: true}
	if raw.stmt, err = rawConn.PrepareContext(ctx, insertSQL); err != nil {
		b.Fatal(err)
	}
	defer raw.stmt.Close()

	d := modernc.New(modernc.Options{Synchronous: "NORMAL"})
	openCellB := func(name string, capture bool) *cellbWriter {
		w := openCellBWriter(b, d, filepath.Join(dir, name), capture)
		b.Cleanup(func() { w.conn.Close() })
		return w
	}
	variants := []struct {
		name      string
		w         writer
		wall, cpu time.Duration
	}{
		{name: "raw-prepared", w: raw},
		{name: "cellb", w: openCellB("cellb.db", false)},
		{name: "capture", w: openCellB("capture.db", true)},
	}
	n := 0
	for b.Loop() {
		for k := range variants {
			v := &variants[(k+n)%len(variants)]
			start, cpu0 := time.Now(), cpuTime()
			for i := range blockTxs {
				key := n*blockTxs + i
				if err := v.w.begin(); err != nil {
					b.Fatal(err)
				}
				if err := v.w.insert(key); err != nil {
					b.Fatal(err)
				}
				if err := v.w.commit(); err != nil {
					b.Fatal(err)
				}
			}
			v.wall += time.Since(start)
			v.cpu += cpuTime() - cpu0
		}
		n++
	}
	txs := float64(n * blockTxs)
	for _, v := range variants {
		b.ReportMetric(float64(v.wall.Nanoseconds())/1e3/txs, v.name+"-µs/tx")
		b.ReportMetric(float64(v.cpu.Nanoseconds())/1e3/txs, v.name+"-cpu-µs/tx")
	}
	b.ReportMetric(float64(variants[2].wall)/float64(variants[1].wall), "capture/cellb")
	b.ReportMetric(float64(variants[2].cpu)/float64(variants[1].cpu), "capture/cellb-cpu")
}
