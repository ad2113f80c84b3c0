package wasm

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestLTXLogOfALargeCellHoldsNoImage: a cell on this driver (WAL mode, page
// capture) opened on the LTX log and written takes no more live heap at
// 64 MiB than at 16 MiB: the log copies the database through WriteImage
// into its spool and streams the snapshot. The heap is sampled while the
// snapshot's body streams to the bucket. Not timed.
//
// Then a new connection is opened on the log with a restore (a fleet
// activation whose bucket wins): the pages go through RestoreWith into the
// driver's file as they are decoded, so that takes no more heap either.
func TestLTXLogOfALargeCellHoldsNoImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 80 MiB of databases")
	}
	grow, rest := map[int]uint64{}, map[int]uint64{}
	for _, mib := range []int{16, 64} {
		grow[mib], rest[mib] = ltxLogPeak(t, mib)
		t.Logf("%d MiB cell: peak live heap growth %.1f MiB writing, %.1f MiB restoring", mib, float64(grow[mib])/(1<<20), float64(rest[mib])/(1<<20))
	}
	if grow[64] > grow[16]+8<<20 || rest[64] > rest[16]+8<<20 {
		t.Fatalf("the 64 MiB cell took %d/%d bytes of heap, the 16 MiB one %d/%d", grow[64], rest[64], grow[16], rest[16])
	}
}

func ltxLogPeak(t *testing.T, mib int) (write, restore uint64) {
	ctx := context.Background()
	drv := New(WithJournalMode(JournalWAL))
	conn, err := drv.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "big.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "CREATE TABLE t(b BLOB)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < mib; i++ {
		if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (zeroblob(1000000))"); err != nil {
			t.Fatal(err)
		}
	}
	pc := conn.(driver.PageCapturer)
	for _, c := range mustTake(t, pc) {
		c.Release()
	}
	peak := &heaptest.HeapPeak{}
	s := sampledStore{memstore.New(), peak}
	lg, err := ltxlog.New(ltxlog.Options{Store: s, SpoolDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	base := peak.Reset()
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "Big:1", Epoch: 1, Conn: conn, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	peak.Sample()
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (x'01')"); err != nil {
		t.Fatal(err)
	}
	commits := mustTake(t, pc)
	d := cl.Append(durability.Commit{Seq: 1, Pages: &commits[0]})
	<-d.Done()
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	peak.Sample()
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	write = peak.Max() - base

	other, err := drv.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "restored.db"), PageCapture: true})
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
	if !rows.Next() || rows.Values()[0] != int64(mib+1) {
		t.Fatalf("the restored cell holds %v rows, want %d", rows.Values(), mib+1)
	}
	return write, restore
}

func mustTake(t *testing.T, pc driver.PageCapturer) []driver.CapturedCommit {
	t.Helper()
	cs, err := pc.TakeCommits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// sampledStore samples the heap every 64 KiB of a streamed put's body.
type sampledStore struct {
	*memstore.Store
	peak *heaptest.HeapPeak
}

func (s sampledStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	r, err := s.Store.NewRangeReader(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	r.Body = readCloser{&sampledBody{r: r.Body, peak: s.peak}, r.Body}
	return r, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

func (s sampledStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return s.Store.PutFrom(ctx, key, &sampledBody{r: r, peak: s.peak}, size, opts)
}

type sampledBody struct {
	r    io.Reader
	peak *heaptest.HeapPeak
	n    int
}

func (b *sampledBody) Read(p []byte) (int, error) {
	if b.n >= 64<<10 {
		b.peak.Sample()
		b.n = 0
	}
	n, err := b.r.Read(p)
	b.n += n
	return n, err
}
