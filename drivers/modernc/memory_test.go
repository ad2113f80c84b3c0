package modernc

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestLargeCellLogsHoldNoImage: a cell on this driver (WAL mode, page
// capture) written through the changeset log, and through backups, takes
// no more live Go heap at 64 MiB than at 16 MiB: the image goes through
// WriteImage into the log's spool and streams to the bucket. Then a new
// connection is opened on the log with a restore: the image streams
// through RestoreWith into the driver's file. The heap is sampled while
// bodies stream to and from the bucket (which keeps them deflated, so it
// holds little of the heap itself). Not timed.
func TestLargeCellLogsHoldNoImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 80 MiB of databases per log")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs := map[string]func(store.Store) (durability.Log, error){
		"changeset": func(s store.Store) (durability.Log, error) {
			return changeset.New(changeset.Options{Store: s, Logger: quiet, SpoolDir: t.TempDir()})
		},
		"backup": func(s store.Store) (durability.Log, error) {
			return backup.New(backup.Options{Store: s, Logger: quiet, SpoolDir: t.TempDir()})
		},
	}
	for _, name := range []string{"changeset", "backup"} {
		grow, rest := map[int]uint64{}, map[int]uint64{}
		for _, mib := range []int{16, 64} {
			grow[mib], rest[mib] = largeCellPeak(t, mib, logs[name], false)
			t.Logf("%s, %d MiB cell: peak live heap growth %.1f MiB writing, %.1f MiB restoring", name, mib, float64(grow[mib])/(1<<20), float64(rest[mib])/(1<<20))
		}
		if grow[64] > grow[16]+8<<20 || rest[64] > rest[16]+8<<20 {
			t.Errorf("%s: the 64 MiB cell took %d/%d bytes of heap, the 16 MiB one %d/%d", name, grow[64], rest[64], grow[16], rest[16])
		}
	}
}

func largeCellPeak(t *testing.T, mib int, open func(store.Store) (durability.Log, error), whole bool) (write, restore uint64) {
	ctx := context.Background()
	dc, err := New(Options{}).Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "big.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	if _, err := dc.Exec(ctx, "CREATE TABLE t(k INTEGER PRIMARY KEY, b BLOB)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < mib; i++ {
		if _, err := dc.Exec(ctx, "INSERT INTO t(b) VALUES (zeroblob(1000000))"); err != nil {
			t.Fatal(err)
		}
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
	runtime.GC() // the captured pages' pool empties in two collections
	peak := &heaptest.HeapPeak{}
	s := heaptest.Bucket{Store: memstore.New(), Peak: peak, MaxWhole: -1}
	lg, err := open(s)
	if err != nil {
		t.Fatal(err)
	}
	base := peak.Reset()
	var conn driver.Conn = sampledConn{dc.(*CapturingConn), peak}
	if whole {
		conn = wholeImages{sampledConn{dc.(*CapturingConn), peak}}
	}
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "Big:1", Epoch: 1, Conn: conn, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		if _, err := dc.Exec(ctx, "INSERT INTO t(b) VALUES (x'01')"); err != nil {
			t.Fatal(err)
		}
		cs := take()
		d := cl.Append(durability.Commit{Seq: seq, Pages: &cs[0]})
		<-d.Done()
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		peak.Sample()
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	write = peak.Max() - base
	if whole {
		return write, 0
	}

	other, err := New(Options{}).Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "restored.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	base = peak.Reset()
	cl, err = lg.Open(ctx, durability.OpenRequest{Cell: "Big:1", Epoch: 2, Conn: other, Restore: true, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	peak.Sample()
	restore = peak.Max() - base
	cl.Close(ctx, false)
	rows, err := other.Query(ctx, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() || rows.Values()[0] != int64(mib+2) {
		t.Fatalf("the restored cell holds %v rows, want %d", rows.Values(), mib+2)
	}
	return write, restore
}

// TestLargeCellMemoryTestSeesAWholeImage: the same measure, with the
// driver's streaming image calls hidden (Serialize, as before), sees the
// image: the test above can fail.
func TestLargeCellMemoryTestSeesAWholeImage(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, _ := largeCellPeak(t, 64, func(s store.Store) (durability.Log, error) {
		return changeset.New(changeset.Options{Store: s, Logger: quiet, SpoolDir: t.TempDir()})
	}, true)
	if w < 48<<20 {
		t.Fatalf("a 64 MiB image read whole left a peak of only %d bytes", w)
	}
}

// sampledConn samples the heap while the driver's image is read: every
// MiB WriteImage writes, and when Serialize returns (its image alive).
type sampledConn struct {
	*CapturingConn
	peak *heaptest.HeapPeak
}

func (c sampledConn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	return c.CapturingConn.WriteImage(ctx, &sampledWriter{w: w, peak: c.peak})
}

func (c sampledConn) Serialize(ctx context.Context) ([]byte, error) {
	img, err := c.CapturingConn.Serialize(ctx)
	c.peak.Sample()
	return img, err
}

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

// wholeImages hides WriteImage and RestoreWith.
type wholeImages struct{ sampledConn }

func (wholeImages) WriteImage()  {}
func (wholeImages) RestoreWith() {}
