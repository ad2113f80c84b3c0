package changeset

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/internal/synthdb"
	"github.com/cellb/cellb/core/store/memstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func waitDurable(t *testing.T, d durability.Durable) error {
	t.Helper()
	select {
	case <-d.Done():
		return d.Err()
	case <-time.After(time.Minute):
		t.Fatal("a commit never became durable")
		return nil
	}
}

// memoryRun writes a synthetic cell of mib MiB through the changeset log
// (a snapshot, changesets, a schema change's second snapshot) and restores
// it with the mode's restore, returning the peak heap growth of each.
// streamed false hides the driver's streaming image calls.
func memoryRun(t *testing.T, mib int, streamed bool) (write, restore uint64) {
	t.Helper()
	ctx := context.Background()
	peak := &synthdb.HeapPeak{}
	d := synthdb.New(mib, peak, false)
	var conn driver.Conn = d
	if !streamed {
		conn = synthdb.Whole{Conn: d}
	}
	s := heaptest.Bucket{Store: memstore.New(), Peak: peak, MaxWhole: 1 << 20}
	lg, err := New(Options{Store: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	const cell = "Mem:01"
	base := peak.Reset()
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: cell, Epoch: 1, Conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	for v := uint32(1); v <= 10; v++ {
		d.Write(v, 1, 2+v, d.Count-v)
		if v == 6 {
			d.Schema++ // sessions do not record DDL: a second snapshot
		}
		if err := waitDurable(t, cl.Append(durability.Commit{Seq: uint64(v)})); err != nil {
			t.Fatal(err)
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
	scratch := func(ctx context.Context) (driver.Conn, error) {
		c := synthdb.New(0, peak, false)
		if !streamed {
			return synthdb.Whole{Conn: c}, nil
		}
		return c, nil
	}
	if _, err := Mode().Restore(ctx, s, cell, durability.RestoreRequest{Scratch: scratch}, sink); err != nil {
		t.Fatal(err)
	}
	restore = peak.Max() - base
	if err := sink.Check(d); err != nil {
		t.Fatalf("restored: %v", err)
	}
	return write, restore
}

// TestMemoryDoesNotGrowWithTheCell: writing and restoring a changeset log
// of a cell four times larger takes no more heap: snapshots are spooled
// from the database page by page and streamed into their files as they
// upload, and the restore streams the snapshot into the database's file,
// keeps the changesets in a temporary file, and copies the result out page
// by page. (Not timed: the heap is sampled inside the work, where an
// image-sized buffer would be alive.) CELLB_MEMTEST_MIB=200 adds a run of
// that size.
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
// without driver.ImageWriter (the log falls back to one Serialize per
// snapshot), sees the image-sized buffer: the test above can fail.
func TestMemoryTestSeesAnImageHeldWhole(t *testing.T) {
	w, _ := memoryRun(t, 64, false)
	if w < 48<<20 {
		t.Fatalf("an image read whole left a peak of only %d bytes", w)
	}
}
