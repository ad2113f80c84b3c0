//go:build cgo

package cgo_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/cgo"
)

// TestBackupOfALargeCellHoldsNoImage: a cell on this driver (WAL, page
// capture) backed up and restored takes no more live Go heap at 64 MiB
// than at 16 MiB: the image goes through WriteImage into the log's spool
// and streams to the bucket, and back through RestoreWith. The heap is
// sampled while the image is read and while bodies stream (the bucket keeps
// them deflated). Its twin, with WriteImage and RestoreWith hidden, sees
// the image. Not timed.
func TestBackupOfALargeCellHoldsNoImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 80 MiB of databases")
	}
	grow, rest := map[int]uint64{}, map[int]uint64{}
	for _, mib := range []int{16, 64} {
		grow[mib], rest[mib] = backupPeak(t, mib, false)
		t.Logf("%d MiB cell: peak live heap growth %.1f MiB writing, %.1f MiB restoring", mib, float64(grow[mib])/(1<<20), float64(rest[mib])/(1<<20))
	}
	if grow[64] > grow[16]+8<<20 || rest[64] > rest[16]+8<<20 {
		t.Fatalf("the 64 MiB cell took %d/%d bytes of heap, the 16 MiB one %d/%d", grow[64], rest[64], grow[16], rest[16])
	}
	if w, r := backupPeak(t, 64, true); w < 48<<20 || r < 48<<20 {
		t.Fatalf("with whole images the 64 MiB cell left a peak of only %d/%d bytes", w, r)
	}
}

func backupPeak(t *testing.T, mib int, whole bool) (write, restore uint64) {
	ctx := context.Background()
	d := &cgo.Driver{}
	dc := open(t, d, filepath.Join(t.TempDir(), "big.db"), true)
	exec(t, dc, "CREATE TABLE t(k INTEGER PRIMARY KEY, b BLOB)")
	for i := 0; i < mib; i++ {
		exec(t, dc, "INSERT INTO t(b) VALUES (zeroblob(1000000))")
	}
	pc := dc.(driver.PageCapturer)
	take := func() []driver.CapturedCommit {
		cs, err := pc.TakeCommits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for _, c := range take() {
		c.Release()
	}
	runtime.GC()
	peak := &heaptest.HeapPeak{}
	lg, err := backup.New(backup.Options{Store: heaptest.Bucket{Store: memstore.New(), Peak: peak, MaxWhole: -1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(c driver.Conn) driver.Conn {
		if whole {
			return wholeConn{sampledConn{c, peak}}
		}
		return sampledConn{c, peak}
	}
	base := peak.Reset()
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "Big:1", Epoch: 1, Conn: wrap(dc), PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		exec(t, dc, "INSERT INTO t(b) VALUES (x'01')")
		cs := take()
		if err := cl.Append(durability.Commit{Seq: seq, Pages: &cs[0]}).Err(); err != nil {
			t.Fatal(err)
		}
		peak.Sample()
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	write = peak.Max() - base

	other := open(t, d, filepath.Join(t.TempDir(), "restored.db"), true)
	base = peak.Reset()
	cl, err = lg.Open(ctx, durability.OpenRequest{Cell: "Big:1", Epoch: 2, Conn: wrap(other), Restore: true, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	peak.Sample()
	restore = peak.Max() - base
	cl.Close(ctx, false)
	if rows := queryRows(t, other, "SELECT count(*) FROM t"); rows[0][0] != int64(mib+2) {
		t.Fatalf("the restored cell holds %v rows, want %d", rows[0][0], mib+2)
	}
	return write, restore
}

// sampledConn samples the heap every MiB WriteImage writes and when
// Serialize returns (its image alive); RestoreWith and Restore too.
type sampledConn struct {
	driver.Conn
	peak *heaptest.HeapPeak
}

func (c sampledConn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	return c.Conn.(driver.ImageWriter).WriteImage(ctx, &sampledWriter{w: w, peak: c.peak})
}

func (c sampledConn) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	return c.Conn.(driver.ImageRestorer).RestoreWith(ctx, fill)
}

func (c sampledConn) Serialize(ctx context.Context) ([]byte, error) {
	img, err := c.Conn.Serialize(ctx)
	c.peak.Sample()
	return img, err
}

func (c sampledConn) Restore(ctx context.Context, image []byte) error {
	c.peak.Sample()
	return c.Conn.Restore(ctx, image)
}

// wholeConn hides WriteImage and RestoreWith.
type wholeConn struct{ sampledConn }

func (wholeConn) WriteImage()  {}
func (wholeConn) RestoreWith() {}

type sampledWriter struct {
	w    io.Writer
	peak *heaptest.HeapPeak
	n    int
}

func (w *sampledWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n >= 1<<20 {
		w.peak.Sample()
		w.n = 0
	}
	return w.w.Write(p)
}
