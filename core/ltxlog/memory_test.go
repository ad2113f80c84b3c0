package ltxlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"
	"weak"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// synthDB is a database whose pages are computed, not stored: the test's
// own memory does not grow with its size, so the heap measured is the
// log's. Page n holds n and the version it was last written at, then
// zeros (so the bucket, a memstore, holds little). It captures pages.
type synthDB struct {
	pageDB
	count    uint32
	version  map[uint32]uint32
	streamed bool // implements driver.ImageWriter (else only Serialize)
	peak     *heaptest.HeapPeak
}

func (d *synthDB) page(pgno uint32, buf []byte) {
	clear(buf)
	binary.BigEndian.PutUint32(buf, pgno)
	binary.BigEndian.PutUint32(buf[4:], d.version[pgno])
}

func (d *synthDB) Serialize(ctx context.Context) ([]byte, error) {
	img := make([]byte, int(d.count)*d.pageSize)
	for pgno := uint32(1); pgno <= d.count; pgno++ {
		d.page(pgno, img[int(pgno-1)*d.pageSize:int(pgno)*d.pageSize])
	}
	d.peak.Sample()
	return img, nil
}

func (d *synthDB) PageCount(ctx context.Context) (int64, error) { return int64(d.count), nil }

// commit rewrites pages (versions bump) and captures them.
func (d *synthDB) commit(v uint32, pgnos ...uint32) driver.CapturedCommit {
	cc := driver.CapturedCommit{PageSize: d.pageSize, PageCount: d.count}
	for _, p := range pgnos {
		d.version[p] = v
		buf := make([]byte, d.pageSize)
		d.page(p, buf)
		cc.Pages = append(cc.Pages, driver.Page{Pgno: p, Data: buf})
	}
	return cc
}

// streamedDB adds driver.ImageWriter.
type streamedDB struct{ *synthDB }

func (d streamedDB) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	buf := make([]byte, d.pageSize)
	var n int64
	for pgno := uint32(1); pgno <= d.count; pgno++ {
		d.page(pgno, buf)
		m, err := w.Write(buf)
		n += int64(m)
		if err != nil {
			return n, err
		}
		if pgno%4096 == 0 {
			d.peak.Sample()
		}
	}
	return n, nil
}

// checkSink verifies a restore's pages against the synthetic database as
// they arrive and keeps nothing.
type checkSink struct {
	d     *synthDB
	peak  *heaptest.HeapPeak
	size  int64
	bad   error
	want  []byte
	seen  []uint32 // the version each page last arrived with
	calls int
}

// check compares the versions that arrived last with the database's.
func (s *checkSink) check() error {
	if s.bad != nil {
		return s.bad
	}
	for i, v := range s.seen {
		if v != s.d.version[uint32(i+1)] {
			return fmt.Errorf("page %d restored at version %d, the database has %d", i+1, v, s.d.version[uint32(i+1)])
		}
	}
	return nil
}

func (s *checkSink) WriteAt(p []byte, off int64) (int, error) {
	ps := int64(s.d.pageSize)
	for i := int64(0); i < int64(len(p)); i += ps {
		pgno := uint32((off+i)/ps) + 1
		// A later file may overwrite the page: keep the version it
		// carries, and check its shape now.
		v := binary.BigEndian.Uint32(p[i+4:])
		s.seen[pgno-1] = v
		binary.BigEndian.PutUint32(s.want, pgno)
		binary.BigEndian.PutUint32(s.want[4:], v)
		if !bytes.Equal(p[i:i+ps], s.want) && s.bad == nil {
			s.bad = fmt.Errorf("page %d is not a page the database ever held", pgno)
		}
	}
	s.calls++
	s.peak.Sample() // the restore coalesces pages into 4 MiB writes: few calls
	s.size = max(s.size, off+int64(len(p)))
	return len(p), nil
}

func (s *checkSink) Truncate(size int64) error { s.size = size; return nil }

// streamOnly is a bucket whose whole-object reads and writes fail: the
// log must stream every object it reads or writes (snapshot, compaction,
// restore), through the store's Streamer half.
type streamOnly struct {
	*memstore.Store
	peak *heaptest.HeapPeak
}

var errWholeObject = errors.New("a whole-object Get or Put was used")

func (s streamOnly) Get(ctx context.Context, key string) (*store.Object, error) {
	return nil, errWholeObject
}

func (s streamOnly) GetData(ctx context.Context, key string) (*store.Object, error) {
	return nil, errWholeObject
}

// PutFrom samples the heap while the body streams (a snapshot or a
// compacted file being encoded: where an image held whole would be alive).
func (s streamOnly) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return s.Store.PutFrom(ctx, key, &sampledReader{r: r, peak: s.peak}, size, opts)
}

type sampledReader struct {
	r    io.Reader
	peak *heaptest.HeapPeak
	n    int // bytes since the last sample
}

func (r *sampledReader) Read(p []byte) (int, error) {
	if r.n >= 64<<10 {
		r.peak.Sample()
		r.n = 0
	}
	n, err := r.r.Read(p)
	r.n += n
	return n, err
}

// memoryRun opens a cell of mib MiB, writes to it (the snapshot and later
// commits), and restores it, returning the peak heap growth over the
// baseline, in bytes, of the write and of the restore.
func memoryRun(t *testing.T, mib int, streamed bool) (write, restore uint64) {
	t.Helper()
	ctx := context.Background()
	const ps = 4096
	d := &synthDB{pageDB: pageDB{pageSize: ps, capture: true}, count: uint32(mib << 20 / ps), version: map[uint32]uint32{}, peak: &heaptest.HeapPeak{}}
	var conn driver.Conn = d
	if streamed {
		conn = streamedDB{d}
	}
	s := streamOnly{memstore.New(), d.peak}
	lg, _ := New(Options{Logger: quiet, Store: s, SpoolDir: t.TempDir(), CompactAfter: 4})

	base := d.peak.Reset()

	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: cell, Epoch: 1, Conn: conn, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	// One commit at a time, so each is its own file and compaction (after
	// four) runs twice.
	for v := uint32(1); v <= 10; v++ {
		cc := d.commit(v, 1, 2+v, d.count-v)
		if err := wait(t, cl.Append(durability.Commit{Seq: uint64(v), Pages: &cc})); err != nil {
			t.Fatal(err)
		}
		d.peak.Sample()
	}
	d.peak.Sample()
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	write = d.peak.Max() - base
	var held int64
	compacted := false
	for _, k := range listKeys(t, s, "") {
		if f, ok := ltx.ParseKey(k); ok && f.Level == 1 {
			compacted = true
		}
		o, _ := s.Store.Get(ctx, k)
		held += int64(len(o.Data))
	}
	t.Logf("%d MiB cell: the bucket holds %d bytes", mib, held)
	if !compacted {
		t.Fatal("no compaction happened: the run does not measure one")
	}

	sink := &checkSink{d: d, peak: d.peak, want: make([]byte, ps), seen: make([]uint32, d.count)}
	base = d.peak.Reset()
	res, err := RestoreTo(ctx, s, cell, RestoreOptions{}, sink)
	if err != nil {
		t.Fatal(err)
	}
	restore = d.peak.Max() - base
	if err := sink.check(); err != nil || sink.size != int64(d.count)*ps || res.TXID != 10 {
		t.Fatalf("restore: %v, %d bytes, TXID %d", err, sink.size, res.TXID)
	}
	return write, restore
}

// TestMemoryDoesNotGrowWithTheCell: opening, writing and restoring a cell
// four times larger takes no more heap: the snapshot is spooled to disk and
// encoded page by page while it uploads, compaction builds its image in a
// file, and the restore decodes while it downloads. (Not timed: the heap is
// sampled inside the work, where an image-sized buffer would be alive.)
// CELLB_MEMTEST_MIB=200 adds a run of that size.
func TestMemoryDoesNotGrowWithTheCell(t *testing.T) {
	const bound = 24 << 20
	sizes := []int{16, 64}
	if v := os.Getenv("CELLB_MEMTEST_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("CELLB_MEMTEST_MIB=%q: %v", v, err)
		}
		sizes = append(sizes, n)
	}
	var w0, r0 uint64
	for i, mib := range sizes {
		w, r := memoryRun(t, mib, true)
		t.Logf("%d MiB cell: peak heap growth %.1f MiB writing, %.1f MiB restoring", mib, float64(w)/(1<<20), float64(r)/(1<<20))
		if w > bound || r > bound {
			t.Errorf("%d MiB cell: the heap grew by %d bytes writing, %d restoring; bound %d", mib, w, r, bound)
		}
		if i == 0 {
			w0, r0 = w, r
		} else if w > w0+8<<20 || r > r0+8<<20 {
			t.Errorf("%d MiB cell takes more heap than %d MiB: %d/%d bytes against %d/%d", mib, sizes[0], w, r, w0, r0)
		}
	}
}

// TestMemoryTestSeesAnImageHeldWhole: the same measure, on a driver
// without driver.ImageWriter (the log falls back to one Serialize at
// open), sees the image-sized buffer: the test above can fail.
func TestMemoryTestSeesAnImageHeldWhole(t *testing.T) {
	w, _ := memoryRun(t, 64, false)
	if w < 48<<20 {
		t.Fatalf("an image read whole at open left a peak of only %d bytes", w)
	}
}

// TestImageModeKeepsNoImage: without page capture the log diffs each
// commit's image against 16-byte sums of the previous one's pages, so once
// a commit is uploaded nothing of its image is held (it kept the whole
// previous image before).
func TestImageModeKeepsNoImage(t *testing.T) {
	ctx := context.Background()
	const ps, pages = 512, 64
	lg, _ := New(Options{Logger: quiet, Store: memstore.New(), CompactAfter: -1})
	d := newPageDB(ps, false)
	cl, err := lg.Open(ctx, openReq(cell, 1, imageOnly{d}, false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, true)
	var last weak.Pointer[[ps * pages]byte]
	for v := byte(1); v <= 3; v++ {
		arr := new([ps * pages]byte)
		for i := range pages {
			arr[i*ps] = byte(i + 1)
		}
		arr[ps*(int(v)+1)+7] = v // one page changes per commit
		last = weak.Make(arr)
		if err := wait(t, cl.Append(durability.Commit{Seq: uint64(v), Image: arr[:]})); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
	if last.Value() != nil {
		t.Fatal("the log still holds the last commit's image after uploading it")
	}
	res, err := Restore(ctx, lg.opts.Store, cell, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TXID != 3 || len(res.Image) != ps*pages || res.Image[ps*4+7] != 3 || res.Image[ps*3+7] != 0 || res.Image[ps*5] != 6 {
		t.Fatalf("restored TXID %d, %d bytes", res.TXID, len(res.Image))
	}
}
