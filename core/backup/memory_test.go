package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/internal/synthdb"
	"github.com/cellb/cellb/core/store/memstore"
)

// memoryRun writes a synthetic cell of mib MiB through a backup log (ten
// commits, a periodic save after the fifth, a save at Close), restores it with the mode's restore and into
// a database (Open with Restore), and returns the peak heap growth of the
// writing and of the restores. capture hands the log captured pages;
// otherwise it reads the image itself (or, with the old runtime, gets it
// as Commit.Image). streamed false hides the driver's streaming image
// calls.
func memoryRun(t *testing.T, mib int, capture, streamed bool) (write, restore uint64) {
	t.Helper()
	ctx := context.Background()
	peak := &synthdb.HeapPeak{}
	d := synthdb.New(mib, peak, capture)
	var conn driver.Conn = d
	if !streamed {
		conn = synthdb.Whole{Conn: d}
	}
	s := heaptest.Bucket{Store: memstore.New(), Peak: peak, MaxWhole: 1 << 20}
	r := &rig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), store: s, ticks: make(chan error, 16)}
	lg, err := New(Options{Store: s, Logger: quiet, Clock: r.clk, Interval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lg.opts.afterTick = func(err error) { r.ticks <- err }
	const cell = "Mem:01"
	base := peak.Reset()
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: cell, Epoch: 1, Conn: conn, PagesCaptured: capture})
	if err != nil {
		t.Fatal(err)
	}
	r.cl = cl
	for v := uint32(1); v <= 10; v++ {
		d.Write(v, 1, 2+v, d.Count-v)
		c := durability.Commit{Seq: uint64(v)}
		if capture {
			cs, _ := d.TakeCommits(ctx)
			c.Pages = &cs[0]
		} else if own, ok := cl.(interface{ ReadsOwnImage() bool }); cl.NeedsImage() && !(ok && own.ReadsOwnImage()) {
			// The runtime before durability.OwnImageReader.
			img, _ := conn.Serialize(ctx)
			c.Image = img
		}
		if err := cl.Append(c).Err(); err != nil {
			t.Fatal(err)
		}
		if v == 5 {
			if err := r.tick(); err != nil {
				t.Fatal(err)
			}
		}
		peak.Sample()
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	write = peak.Max() - base
	if !streamed {
		return write, 0 // a driver without RestoreWith restores whole images
	}

	sink := &synthdb.File{Peak: peak}
	base = peak.Reset()
	if _, err := Mode().Restore(ctx, s, cell, durability.RestoreRequest{}, sink); err != nil {
		t.Fatal(err)
	}
	if err := sink.Check(d); err != nil {
		t.Fatalf("restored: %v", err)
	}
	into := synthdb.New(0, peak, false)
	cl, err = lg.Open(ctx, durability.OpenRequest{Cell: cell, Epoch: 2, Conn: into, Restore: true})
	if err != nil {
		t.Fatal(err)
	}
	cl.Close(ctx, false)
	restore = peak.Max() - base
	if into.Count != d.Count || len(into.Version) != len(d.Version) {
		t.Fatalf("restored into the database: %d pages, %d written, want %d, %d", into.Count, len(into.Version), d.Count, len(d.Version))
	}
	for p, v := range d.Version {
		if into.Version[p] != v {
			t.Fatalf("restored into the database: page %d at version %d, want %d", p, into.Version[p], v)
		}
	}
	return write, restore
}

// TestMemoryDoesNotGrowWithTheCell: backing up and restoring a cell four
// times larger takes no more heap, with and without page capture: the
// commit-time image is spooled from the database page by page, saves
// stream it to the bucket, restores stream it back. (Not timed: the heap
// is sampled inside the work, where an image-sized buffer would be
// alive.) CELLB_MEMTEST_MIB=200 adds a run of that size.
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
	for _, capture := range []bool{true, false} {
		var w0, r0 uint64
		for i, mib := range sizes {
			w, r := memoryRun(t, mib, capture, true)
			t.Logf("%d MiB cell, capture %v: peak heap growth %.1f MiB writing, %.1f MiB restoring", mib, capture, float64(w)/(1<<20), float64(r)/(1<<20))
			if w > bound || r > bound {
				t.Errorf("%d MiB cell, capture %v: the heap grew by %d bytes writing, %d restoring; bound %d", mib, capture, w, r, bound)
			}
			if i == 0 {
				w0, r0 = w, r
			} else if w > w0+8<<20 || r > r0+8<<20 {
				t.Errorf("%d MiB cell, capture %v, takes more heap than %d MiB: %d/%d bytes against %d/%d", mib, capture, sizes[0], w, r, w0, r0)
			}
		}
	}
}

// TestMemoryTestSeesAnImageHeldWhole: the same measure, on a driver
// without driver.ImageWriter (the log falls back to Serialize), sees the
// image-sized buffer: the test above can fail.
func TestMemoryTestSeesAnImageHeldWhole(t *testing.T) {
	w, _ := memoryRun(t, 64, false, false)
	if w < 48<<20 {
		t.Fatalf("an image read whole left a peak of only %d bytes", w)
	}
}

// bytesSink is a durability.RestoreSink in memory.
type bytesSink struct{ memImage }

// The mode's restore (streamed, checked as it goes) writes exactly the
// object the save stored, which is what the whole-object path gave: the
// object's bytes, checked against its SHA-256 metadata. Saves of an image
// over 1 MiB stream from the spool; with and without capture.
func TestStreamedRestoreIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	for _, capture := range []bool{true, false} {
		s := memstore.New()
		r := newRig(t, s, capture, 3)
		rnd := rand.New(rand.NewPCG(3, 4))
		for range 5 {
			r.commit(rnd)
		}
		for len(r.db.pages)*r.db.pageSize < 3<<20/2 {
			r.db.pages = append(r.db.pages, bytes.Repeat([]byte{7}, r.db.pageSize))
			r.db.dirty[uint32(len(r.db.pages))] = true
		}
		r.db.record()
		r.handOver()
		if err := r.cl.Close(ctx, true); err != nil {
			t.Fatal(err)
		}
		infos, _ := List(ctx, s, cell)
		obj, err := s.Get(ctx, infos[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(obj.Data)
		if obj.Metadata[metaSHA256] != hex.EncodeToString(sum[:]) || !bytes.Equal(obj.Data, r.db.image()) {
			t.Fatalf("capture %v: the stored backup is not the image with its SHA-256", capture)
		}
		var out bytesSink
		if _, err := Mode().Restore(ctx, s, cell, durability.RestoreRequest{}, &out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.b, obj.Data) {
			t.Fatalf("capture %v: restored %d bytes, the backup holds %d", capture, len(out.b), len(obj.Data))
		}
	}
}

// Without capture too, a commit made while a save uploads (a new image
// spooled, the one being saved closed by the save) leaves the save's bytes
// alone, and the next save stores the newest image.
func TestCommitDuringSaveKeepsSavedImageWithoutCapture(t *testing.T) {
	s := &gated{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	r := newRig(t, s, false, 3)
	rnd := rand.New(rand.NewPCG(9, 10))
	for range 3 {
		r.commit(rnd)
	}
	want := r.db.image()
	r.clk.Advance(time.Minute)
	<-s.entered
	for range 5 {
		r.db.rewrite(rnd)
		r.handOver()
	}
	close(s.release)
	if err := <-r.ticks; err != nil {
		t.Fatal(err)
	}
	r.mustRestore(want)
	go func() {
		for range s.entered {
		}
	}()
	if err := r.cl.Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	r.mustRestore(r.db.image())
}
