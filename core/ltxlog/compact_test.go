package ltxlog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// heldReads is a bucket whose reads (a compaction reads, an upload never
// does) block while held, until released or their context ends.
type heldReads struct {
	*faultstore.Store
	held    atomic.Bool
	entered chan struct{} // gets a value when a read first blocks
	release chan struct{}
	once    sync.Once
}

func newHeldReads(mem store.Store) *heldReads {
	h := &heldReads{entered: make(chan struct{}, 1), release: make(chan struct{})}
	h.Store = faultstore.New(mem, faultstore.Config{BeforeCall: func(ctx context.Context, c faultstore.Call) error {
		if c.Op != faultstore.OpGet || !h.held.Load() {
			return nil
		}
		h.once.Do(func() { h.entered <- struct{}{} })
		select {
		case <-h.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	h.held.Store(true)
	return h
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never happened", what)
	}
}

// TestCompactionDoesNotHoldAcknowledgements: while a compaction is stuck
// reading its inputs, later commits are still uploaded and acknowledged
// (on the uploader's goroutine, as compaction used to run, commit 3 waited
// for the compaction to end). A final close waits for the compaction; a
// crash close cancels it. Either way the bucket restores to the last
// acknowledged commit.
func TestCompactionDoesNotHoldAcknowledgements(t *testing.T) {
	for _, final := range []bool{true, false} {
		t.Run(fmt.Sprintf("final=%v", final), func(t *testing.T) {
			ctx := context.Background()
			mem := memstore.New()
			hs := newHeldReads(mem)
			lg, _ := New(Options{Logger: quiet, Store: hs, CompactAfter: 2, Retention: -1})
			d := newPageDB(512, true)
			cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, 7))
			for i := 1; i <= 2; i++ {
				d.mutate(r)
				if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, hs.entered, "a compaction after two level-0 files")
			for i := 3; i <= 12; i++ {
				d.mutate(r)
				if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
					t.Fatalf("commit %d while a compaction runs: %v", i, err)
				}
			}
			want := d.image()
			if final {
				close(hs.release)
				if err := cl.Close(ctx, true); err != nil {
					t.Fatal(err)
				}
			} else if err := cl.Close(ctx, false); err != nil {
				t.Fatal(err)
			}
			hs.held.Store(false)
			res, err := Restore(ctx, mem, cell, RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.TXID != 12 || !bytes.Equal(res.Image, want) {
				t.Fatalf("restored TXID %d (equal=%v), want 12", res.TXID, bytes.Equal(res.Image, want))
			}
			page, _ := store.ListAll(ctx, mem, store.ListOptions{Prefix: ltx.EpochPrefix(cell, 1)})
			l1 := 0
			for _, o := range page.Objects {
				if f, ok := ltx.ParseKey(o.Key); ok && f.Level == 1 {
					l1++
				}
			}
			if final && (l1 != 1 || len(page.Objects) > 2) {
				// The compactor went on until fewer than two level-0
				// files were left.
				t.Errorf("after a final close: %d level-1 files among %d, want 1 and at most 2 files", l1, len(page.Objects))
			}
			if !final && l1 != 0 {
				t.Errorf("the cancelled compaction stored a level-1 file")
			}
		})
	}
}

// TestConcurrentWritersWithBackgroundCompaction: 24 writers commit to one
// cell (the runtime hands their commits to the log one at a time, they
// wait for them together, so batches form), compactions run all along,
// and 4 readers restore meanwhile. Every restore yields exactly the image
// of the TXID it reports, at or after the newest commit acknowledged before
// it started (a compaction deleting files it listed restarts it); after a
// final close the restore is the last commit. With the default rule and
// with range merges only (a full-merge threshold never reached), so range
// files are written, merged into larger ones and deleted under the readers.
func TestConcurrentWritersWithBackgroundCompaction(t *testing.T) {
	for _, percent := range []int{0, 1 << 20} {
		t.Run(fmt.Sprintf("percent=%d", percent), func(t *testing.T) { concurrentWritersWithCompaction(t, percent) })
	}
}

func concurrentWritersWithCompaction(t *testing.T, percent int) {
	ctx := context.Background()
	mem := memstore.New()
	var deletes, rangeDeletes atomic.Int64
	s := faultstore.New(mem, faultstore.Config{BeforeCall: func(ctx context.Context, c faultstore.Call) error {
		if c.Op == faultstore.OpDelete && strings.Contains(c.Key, "/0000/") {
			deletes.Add(1)
		}
		if f, ok := ltx.ParseKey(c.Key); ok && c.Op == faultstore.OpDelete && f.Level == 1 && f.MinTXID > 1 {
			rangeDeletes.Add(1)
		}
		return nil
	}})
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: 3, RangeFanout: 2, FullMergePercent: percent, Retention: -1})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex // the runtime's thread: one commit at a time
		history = map[ltx.TXID][]byte{}
		txid    ltx.TXID
		acked   atomic.Uint64 // newest TXID acknowledged (a lower bound)
		r       = rand.New(rand.NewPCG(3, 9))
	)
	const writers, perWriter = 24, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers+8)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				mu.Lock()
				d.mutate(r)
				txid++
				my := txid
				history[my] = d.image()
				commits, _ := d.TakeCommits(ctx)
				f := cl.Append(durability.Commit{Seq: uint64(my), Pages: &commits[0]})
				mu.Unlock()
				<-f.Done()
				if err := f.Err(); err != nil {
					errs <- fmt.Errorf("commit %d: %w", my, err)
					return
				}
				for {
					old := acked.Load()
					if uint64(my) <= old || acked.CompareAndSwap(old, uint64(my)) {
						break
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	var restores atomic.Int64
	for k := 0; k < 4; k++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				floor := ltx.TXID(acked.Load())
				if floor == 0 {
					runtime.Gosched()
					continue
				}
				res, err := Restore(ctx, mem, cell, RestoreOptions{})
				if err != nil {
					errs <- fmt.Errorf("restore during writes: %w", err)
					return
				}
				mu.Lock()
				want, ok := history[res.TXID]
				mu.Unlock()
				if res.TXID < floor || !ok || !bytes.Equal(res.Image, want) {
					errs <- fmt.Errorf("restore during writes: TXID %d (acknowledged before: %d), image equal=%v", res.TXID, floor, ok && bytes.Equal(res.Image, want))
					return
				}
				restores.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res, err := Restore(ctx, mem, cell, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TXID != writers*perWriter || !bytes.Equal(res.Image, d.image()) {
		t.Fatalf("final restore: TXID %d (equal=%v), want %d", res.TXID, bytes.Equal(res.Image, d.image()), writers*perWriter)
	}
	if deletes.Load() == 0 {
		t.Fatal("no compaction deleted a level-0 file: the test saw none")
	}
	if percent != 0 && rangeDeletes.Load() == 0 {
		t.Fatal("no range file was merged into a larger one: the test saw none")
	}
	t.Logf("%d restores during writes, %d level-0 and %d range files compacted away", restores.Load(), deletes.Load(), rangeDeletes.Load())
}
