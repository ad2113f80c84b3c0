//go:build cgo

package cgo_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3" for the raw baseline

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

// The two workloads of docs/benchmarks-drivers-cgo.md, each run three ways
// on a fresh file database in WAL mode with synchronous=NORMAL: mattn's own
// database/sql driver with a prepared statement (the baseline), CellB's
// driver, and CellB's driver with page capture (TakeCommits after every
// commit, and the pages released as the durability log releases them).

const (
	bulkRows  = 100_000
	singleTxs = 10_000
	createSQL = "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)"
	insertSQL = "INSERT INTO t(a, b) VALUES (?, ?)"
	payload   = "twenty bytes of text"
)

func BenchmarkBulkInsert(b *testing.B) {
	b.Run("mattn", func(b *testing.B) { benchRaw(b, 1, bulkRows) })
	b.Run("cellb", func(b *testing.B) { benchCellB(b, false, 1, bulkRows) })
	b.Run("cellb-capture", func(b *testing.B) { benchCellB(b, true, 1, bulkRows) })
}

func BenchmarkSingleRowTx(b *testing.B) {
	b.Run("mattn", func(b *testing.B) { benchRaw(b, singleTxs, 1) })
	b.Run("cellb", func(b *testing.B) { benchCellB(b, false, singleTxs, 1) })
	b.Run("cellb-capture", func(b *testing.B) { benchCellB(b, true, singleTxs, 1) })
}

func benchRaw(b *testing.B, txs, rowsPerTx int) {
	ctx := context.Background()
	var cpu cpuClock
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "raw.db")
		db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_sync=NORMAL&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		if _, err := db.ExecContext(ctx, createSQL); err != nil {
			b.Fatal(err)
		}
		st, err := db.PrepareContext(ctx, insertSQL)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu.start()
		for i := range txs {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			txst := tx.StmtContext(ctx, st)
			for j := range rowsPerTx {
				if _, err := txst.ExecContext(ctx, i*rowsPerTx+j, payload); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		cpu.stop()
		b.StopTimer()
		st.Close()
		db.Close()
		b.StartTimer()
	}
	report(b, cpu, txs, rowsPerTx)
}

func benchCellB(b *testing.B, capture bool, txs, rowsPerTx int) {
	ctx := context.Background()
	d := &cgo.Driver{Synchronous: cgo.SyncNormal}
	var cpu cpuClock
	for b.Loop() {
		b.StopTimer()
		c, err := d.Open(ctx, driver.Config{Path: filepath.Join(b.TempDir(), "cellb.db"), PageCapture: capture})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, createSQL); err != nil {
			b.Fatal(err)
		}
		pc, _ := c.(driver.PageCapturer)
		if capture {
			if _, err := pc.TakeCommits(ctx); err != nil {
				b.Fatal(err)
			}
		}
		pages := 0
		b.StartTimer()
		cpu.start()
		for i := range txs {
			if err := c.Begin(ctx); err != nil {
				b.Fatal(err)
			}
			for j := range rowsPerTx {
				if _, err := c.Exec(ctx, insertSQL, i*rowsPerTx+j, payload); err != nil {
					b.Fatal(err)
				}
			}
			if err := c.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			if capture {
				commits, err := pc.TakeCommits(ctx)
				if err != nil || len(commits) != 1 {
					b.Fatalf("TakeCommits: %d commits, %v", len(commits), err)
				}
				pages += len(commits[0].Pages)
				commits[0].Release() // as the durability log does once it encoded them
			}
		}
		cpu.stop()
		b.StopTimer()
		if capture {
			b.ReportMetric(float64(pages)/float64(txs), "pages/commit")
		}
		c.Close()
		b.StartTimer()
	}
	report(b, cpu, txs, rowsPerTx)
}

// report adds per-transaction (or per-row) wall and CPU time. The CPU time
// (user+system of the whole process) is the steadier figure on a shared
// machine, where wall time includes waiting for a core.
func report(b *testing.B, cpu cpuClock, txs, rowsPerTx int) {
	if txs > 1 {
		n := float64(b.N * txs)
		b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "µs/tx")
		b.ReportMetric(float64(cpu.total.Microseconds())/n, "cpu-µs/tx")
	} else {
		n := float64(b.N * rowsPerTx)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/row")
		b.ReportMetric(float64(cpu.total.Nanoseconds())/n, "cpu-ns/row")
	}
}

// cpuClock sums the process's CPU time over the timed sections.
type cpuClock struct {
	total time.Duration
	begin time.Duration
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cpuClock) start() { c.begin = processCPU() }
func (c *cpuClock) stop()  { c.total += processCPU() - c.begin }

// BenchmarkSingleRowTxInterleaved runs the single-row transactions of the
// three variants in alternating blocks on three open databases, so that a
// busy machine slows all three alike, and reports each variant's wall and
// CPU time per transaction and the ratios between them. One iteration is
// one block of blockTxs transactions per variant.
func BenchmarkSingleRowTxInterleaved(b *testing.B) {
	const blockTxs = 200
	ctx := context.Background()
	dir := b.TempDir()

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "raw.db")+"?_journal_mode=WAL&_sync=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, createSQL); err != nil {
		b.Fatal(err)
	}
	st, err := db.PrepareContext(ctx, insertSQL)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	d := &cgo.Driver{Synchronous: cgo.SyncNormal}
	openCellB := func(name string, capture bool) driver.Conn {
		c, err := d.Open(ctx, driver.Config{Path: filepath.Join(dir, name), PageCapture: capture})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, createSQL); err != nil {
			b.Fatal(err)
		}
		return c
	}
	plain, capt := openCellB("cellb.db", false), openCellB("capture.db", true)
	defer plain.Close()
	defer capt.Close()
	pc := capt.(driver.PageCapturer)
	if _, err := pc.TakeCommits(ctx); err != nil {
		b.Fatal(err)
	}

	raw := func(i int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, i, payload); err != nil {
			return err
		}
		return tx.Commit()
	}
	cellb := func(c driver.Conn, capture bool) func(int) error {
		return func(i int) error {
			if err := c.Begin(ctx); err != nil {
				return err
			}
			if _, err := c.Exec(ctx, insertSQL, i, payload); err != nil {
				return err
			}
			if err := c.Commit(ctx); err != nil {
				return err
			}
			if capture {
				commits, err := pc.TakeCommits(ctx)
				if err == nil && len(commits) != 1 {
					err = fmt.Errorf("%d commits", len(commits))
				}
				for i := range commits {
					commits[i].Release()
				}
				return err
			}
			return nil
		}
	}
	variants := []struct {
		name string
		run  func(int) error
		wall time.Duration
		cpu  time.Duration
	}{
		{name: "mattn", run: raw},
		{name: "cellb", run: cellb(plain, false)},
		{name: "capture", run: cellb(capt, true)},
	}
	n := 0
	for b.Loop() {
		for k := range variants {
			v := &variants[(k+n)%len(variants)] // rotate which goes first
			start, cpu0 := time.Now(), processCPU()
			for i := range blockTxs {
				if err := v.run(n*blockTxs + i); err != nil {
					b.Fatalf("%s: %v", v.name, err)
				}
			}
			v.wall += time.Since(start)
			v.cpu += processCPU() - cpu0
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
	b.ReportMetric(float64(variants[1].wall)/float64(variants[0].wall), "cellb/mattn")
	b.ReportMetric(float64(variants[1].cpu)/float64(variants[0].cpu), "cellb/mattn-cpu")
}
