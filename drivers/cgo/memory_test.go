//go:build cgo

package cgo_test

import (
	"bytes"
	"compress/flate"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
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
	peak := &heapPeak{}
	lg, err := backup.New(backup.Options{Store: deflatedStore{memstore.New(), peak}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(c driver.Conn) driver.Conn {
		if whole {
			return wholeConn{sampledConn{c, peak}}
		}
		return sampledConn{c, peak}
	}
	base := peak.reset()
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
		peak.sample()
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	write = peak.max.Load() - base

	other := open(t, d, filepath.Join(t.TempDir(), "restored.db"), true)
	base = peak.reset()
	cl, err = lg.Open(ctx, durability.OpenRequest{Cell: "Big:1", Epoch: 2, Conn: wrap(other), Restore: true, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	peak.sample()
	restore = peak.max.Load() - base
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
	peak *heapPeak
}

func (c sampledConn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	return c.Conn.(driver.ImageWriter).WriteImage(ctx, &sampledWriter{w: w, peak: c.peak})
}

func (c sampledConn) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	return c.Conn.(driver.ImageRestorer).RestoreWith(ctx, fill)
}

func (c sampledConn) Serialize(ctx context.Context) ([]byte, error) {
	img, err := c.Conn.Serialize(ctx)
	c.peak.sample()
	return img, err
}

func (c sampledConn) Restore(ctx context.Context, image []byte) error {
	c.peak.sample()
	return c.Conn.Restore(ctx, image)
}

// wholeConn hides WriteImage and RestoreWith.
type wholeConn struct{ sampledConn }

func (wholeConn) WriteImage()  {}
func (wholeConn) RestoreWith() {}

type sampledWriter struct {
	w    io.Writer
	peak *heapPeak
	n    int
}

func (w *sampledWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n >= 1<<20 {
		w.peak.sample()
		w.n = 0
	}
	return w.w.Write(p)
}

type heapPeak struct{ max atomic.Uint64 }

func (h *heapPeak) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for {
		old := h.max.Load()
		if ms.HeapAlloc <= old || h.max.CompareAndSwap(old, ms.HeapAlloc) {
			return
		}
	}
}

func (h *heapPeak) reset() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.max.Store(ms.HeapAlloc)
	return ms.HeapAlloc
}

// deflatedStore keeps bodies deflated and samples the heap every MiB of a
// streamed body, both ways.
type deflatedStore struct {
	*memstore.Store
	peak *heapPeak
}

const metaInflated = "test-inflated-size"

func (s deflatedStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return s.PutFrom(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

func (s deflatedStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	var z bytes.Buffer
	zw, _ := flate.NewWriter(&z, flate.BestSpeed)
	n, err := io.Copy(zw, &sampledReader{r: r, peak: s.peak})
	if err != nil {
		return "", err
	}
	zw.Close()
	md := map[string]string{metaInflated: strconv.FormatInt(n, 10)}
	for k, v := range opts.Metadata {
		md[k] = v
	}
	opts.Metadata = md
	return s.Store.Put(ctx, key, z.Bytes(), opts)
}

func (s deflatedStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	o, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	size, _ := strconv.ParseInt(o.Metadata[metaInflated], 10, 64)
	n, err := store.CheckRange("get", key, offset, length, size)
	if err != nil {
		return nil, err
	}
	zr := flate.NewReader(bytes.NewReader(o.Data))
	if _, err := io.CopyN(io.Discard, zr, offset); err != nil {
		return nil, err
	}
	md := map[string]string{}
	for k, v := range o.Metadata {
		if k != metaInflated {
			md[k] = v
		}
	}
	return &store.Reader{Key: key, Version: o.Version, Size: size, Metadata: md, Offset: offset, Length: n,
		Body: io.NopCloser(&sampledReader{r: io.LimitReader(zr, n), peak: s.peak})}, nil
}

func (s deflatedStore) Get(ctx context.Context, key string) (*store.Object, error) {
	r, err := s.NewRangeReader(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return &store.Object{Key: key, Data: data, Version: r.Version, Metadata: r.Metadata}, nil
}

type sampledReader struct {
	r    io.Reader
	peak *heapPeak
	n    int
}

func (r *sampledReader) Read(p []byte) (int, error) {
	if r.n >= 1<<20 {
		r.peak.sample()
		r.n = 0
	}
	n, err := r.r.Read(p)
	r.n += n
	return n, err
}
