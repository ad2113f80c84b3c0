package ltxlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// watchedBucket is a memstore that counts the bytes written per LTX level,
// mirrors every level-0 file into raw (which never loses one: the log as
// it was before any compaction), and calls after, on the caller's
// goroutine, once each write of a compacted file (level 1 and up) or each
// delete has reached the bucket — every state a crash could leave.
type watchedBucket struct {
	*memstore.Store
	raw   *memstore.Store
	mu    sync.Mutex
	put   map[int]int64 // bytes written, by level
	after func(op, key string)
}

func newWatchedBucket() *watchedBucket {
	return &watchedBucket{Store: memstore.New(), raw: memstore.New(), put: map[int]int64{}}
}

func (w *watchedBucket) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	f, isLTX := ltx.ParseKey(key)
	if isLTX && f.Level == 0 {
		if _, err := w.raw.Put(ctx, key, data, opts); err != nil {
			return "", err
		}
	}
	v, err := w.Store.Put(ctx, key, data, opts)
	if err != nil {
		return v, err
	}
	if isLTX {
		w.mu.Lock()
		w.put[f.Level] += int64(len(data))
		w.mu.Unlock()
		if f.Level >= 1 && w.after != nil {
			w.after("put", key)
		}
	}
	return v, nil
}

func (w *watchedBucket) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	data, err := store.ReadBody(ctx, "put", key, r, size)
	if err != nil {
		return "", err
	}
	return w.Put(ctx, key, data, opts)
}

func (w *watchedBucket) Delete(ctx context.Context, key string) error {
	if err := w.Store.Delete(ctx, key); err != nil {
		return err
	}
	if w.after != nil {
		w.after("delete", key)
	}
	return nil
}

func (w *watchedBucket) written(level int) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.put[level]
}

// chainShape lists the bucket's chain for the cell's epoch, plans it, and
// checks celld's rules (§6.4–6.6 of the bucket format): levels 0 and 1
// only; the plan starts with one file from TXID 1 and goes on with files
// each starting right after the previous one; level-1 files after the
// first are the range files. It returns the plan, the full file's size,
// the range files' total size and count, and the level-0 tail's size.
type chainShape struct {
	plan              []ltx.FileInfo
	full, ranges, l0s int64
	nRanges           int
}

func planChain(t *testing.T, s store.Store, epoch uint64) (chainShape, error) {
	t.Helper()
	files, err := listEpochFiles(context.Background(), s, cell, epoch)
	if err != nil {
		return chainShape{}, err
	}
	plan, err := ltx.Plan(files)
	if err != nil {
		return chainShape{}, err
	}
	var sh chainShape
	sh.plan = plan
	for i, f := range plan {
		if f.Level > 1 {
			return sh, fmt.Errorf("%s: level %d, CellB writes levels 0 and 1", f.Key, f.Level)
		}
		if i == 0 {
			if f.MinTXID != 1 {
				return sh, fmt.Errorf("the plan starts with %s, not at TXID 1", f.Key)
			}
			sh.full = f.Size
			continue
		}
		if f.MinTXID != plan[i-1].MaxTXID+1 {
			return sh, fmt.Errorf("%s does not start right after %s", f.Key, plan[i-1].Key)
		}
		if f.Level == 1 {
			if plan[i-1].Level != 1 && i > 1 {
				return sh, fmt.Errorf("range file %s follows a level-0 file", f.Key)
			}
			sh.ranges += f.Size
			sh.nRanges++
		} else {
			sh.l0s += f.Size
		}
	}
	return sh, nil
}

// TestCompactionWritesWhatChanged: a 16 MiB database of incompressible
// pages takes 640 one-page commits (each also rewrites page 1, as SQLite
// does). Compactions run every 64 level-0 files; the bytes they write to
// the bucket follow the pages those commits changed, not the database:
// the old compaction rewrote the whole database each time (10 × 16 MiB).
//
// CELLB_COMPACT_MIB=n runs it on a database of n MiB instead.
func TestCompactionWritesWhatChanged(t *testing.T) {
	ctx := context.Background()
	const ps, commits = 4096, 640
	pages := 4096
	if v := os.Getenv("CELLB_COMPACT_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CELLB_COMPACT_MIB=%q", v)
		}
		pages = n << 20 / ps
	}
	b := newWatchedBucket()
	lg, _ := New(Options{Logger: quiet, Store: b, SpoolDir: t.TempDir(), Retention: -1})
	d := newPageDB(ps, true)
	r := rand.New(rand.NewPCG(13, 13))
	for i := 0; i < pages; i++ {
		p := make([]byte, ps)
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		d.pages = append(d.pages, p)
	}
	cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= commits+1; i++ {
		if i > 1 { // the first commit's file is the snapshot
			d.touch(uint32(2+r.IntN(pages-1)), r)
		}
		d.touch(1, r)
		d.commit()
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
		waitCompactor(t, cl.(*cellLog)) // each compaction of its 64 files
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, b, cell, RestoreOptions{})
	if err != nil || res.TXID != commits+1 || !bytes.Equal(res.Image, d.image()) {
		t.Fatalf("restore: %v", err)
	}
	sh, err := planChain(t, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	l0, l1 := b.written(0), b.written(1)
	snapshot := sh.full // the snapshot is the chain's full file: no full merge ran
	changed := l0 - snapshot
	t.Logf("database %d bytes; snapshot %d; level-0 deltas %d; compaction wrote %d (%.2f per level-0 byte); restore plan: %d files (%d range files), %d bytes",
		pages*ps, snapshot, changed, l1, float64(l1)/float64(changed), len(sh.plan), sh.nRanges, sh.full+sh.ranges+sh.l0s)
	if l1 == 0 {
		t.Fatal("no compaction ran")
	}
	if l1 > 3*changed || l1 > int64(pages*ps/2) {
		t.Errorf("compaction wrote %d bytes for %d bytes of level-0 deltas over a %d-byte database", l1, changed, pages*ps)
	}
	if sh.ranges >= sh.full {
		t.Errorf("the restore reads %d bytes of range files after a %d-byte full file", sh.ranges, sh.full)
	}
}

// TestRangeCompactionRestoresIdentically: a small database that grows,
// shrinks and changes at random, compacting every 2 level-0 files with
// range merges that absorb earlier ranges (fanout 3) and full merges
// between them. After every write of a compacted file and after every
// delete — each a state a crash could leave — the bucket restores (while
// uploads go on) to exactly the image of the TXID it reports, byte for
// byte what the log before any compaction restores at that TXID; the chain
// passes ltx.Plan and celld's rules; and a restore reads no more than the
// full file, range files smaller than it together, and the level-0 tail.
func TestRangeCompactionRestoresIdentically(t *testing.T) {
	for _, pct := range []int{100, 300} {
		t.Run(fmt.Sprintf("percent=%d", pct), func(t *testing.T) {
			ctx := context.Background()
			b := newWatchedBucket()
			var (
				mu      sync.Mutex
				history = map[ltx.TXID][]byte{}
				errs    []error
				steps   int
				seen    struct{ ranges, absorbs, fulls, leftovers int }
				starts  = map[ltx.TXID]bool{} // range files' first TXIDs
			)
			fail := func(err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			b.after = func(op, key string) {
				f, _ := ltx.ParseKey(key)
				mu.Lock()
				steps++
				if op == "put" {
					switch {
					case f.MinTXID == 1:
						seen.fulls++
					case starts[f.MinTXID]:
						seen.absorbs++ // it took in the range file(s) from there
					default:
						seen.ranges++
					}
					starts[f.MinTXID] = true
				}
				mu.Unlock()
				res, err := Restore(ctx, b, cell, RestoreOptions{})
				if err != nil {
					fail(fmt.Errorf("after %s %s: restore: %w", op, key, err))
					return
				}
				raw, err := Restore(ctx, b.raw, cell, RestoreOptions{TXID: res.TXID})
				if err != nil {
					fail(fmt.Errorf("after %s %s: restore of the uncompacted log at %d: %w", op, key, res.TXID, err))
					return
				}
				mu.Lock()
				want, ok := history[res.TXID]
				mu.Unlock()
				if !ok || !bytes.Equal(res.Image, want) || !bytes.Equal(res.Image, raw.Image) {
					fail(fmt.Errorf("after %s %s: TXID %d restores another image (history %v, uncompacted equal %v)", op, key, res.TXID, ok && bytes.Equal(res.Image, want), bytes.Equal(res.Image, raw.Image)))
					return
				}
				sh, err := planChain(t, b, 1)
				if err != nil {
					fail(fmt.Errorf("after %s %s: %w", op, key, err))
					return
				}
				if sh.ranges*100 >= int64(pct)*sh.full {
					fail(fmt.Errorf("after %s %s: range files of %d bytes after a full file of %d", op, key, sh.ranges, sh.full))
				}
				files, _ := listEpochFiles(ctx, b, cell, 1)
				if len(files) > len(sh.plan) {
					mu.Lock()
					seen.leftovers++
					mu.Unlock()
				}
			}
			lg, _ := New(Options{Logger: quiet, Store: b, CompactAfter: 2, RangeFanout: 3, FullMergePercent: pct, Retention: -1})
			d := newPageDB(512, true)
			cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(pct), 5))
			for i := 0; i < 40; i++ { // a database of some size first
				d.pages = append(d.pages, make([]byte, 512))
				d.touch(uint32(len(d.pages)), r)
			}
			for i := 1; i <= 300; i++ {
				d.mutate(r)
				mu.Lock()
				history[ltx.TXID(i)] = d.image()
				mu.Unlock()
				if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
					t.Fatal(err)
				}
				// One compaction at a time, each of the run it started
				// with: the shapes the rules make, not the timing's.
				waitCompactor(t, cl.(*cellLog))
			}
			if err := cl.Close(ctx, true); err != nil {
				t.Fatal(err)
			}
			b.after(("end"), "")
			for _, err := range errs {
				t.Error(err)
			}
			res, err := Restore(ctx, b, cell, RestoreOptions{})
			if err != nil || res.TXID != 300 || !bytes.Equal(res.Image, d.image()) {
				t.Fatalf("final restore: %v", err)
			}
			sh, _ := planChain(t, b, 1)
			t.Logf("%d checked states: %d range merges of level-0 runs, %d that took in earlier range files, %d full merges, %d states with left-over files; final plan %d files (%d ranges)",
				steps, seen.ranges, seen.absorbs, seen.fulls, seen.leftovers, len(sh.plan), sh.nRanges)
			if seen.ranges == 0 || seen.absorbs == 0 || seen.fulls == 0 || seen.leftovers == 0 {
				t.Fatal("the run did not exercise range merges, their absorption, full merges and left-over files")
			}
			// 299 level-0 files, in runs of 2: with fanout 3 at most 2
			// ranges of each weight.
			if limit := 2 * (int(math.Log(150)/math.Log(3)) + 1); sh.nRanges > limit {
				t.Errorf("%d range files in the chain, want at most %d", sh.nRanges, limit)
			}
		})
	}
}

// waitCompactor waits until no compactor runs.
func waitCompactor(t testing.TB, c *cellLog) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		c.mu.Lock()
		busy := c.compacting
		c.mu.Unlock()
		if !busy {
			return
		}
	}
	t.Fatal("the compactor never finished")
}

// TestCompactionWhoseDeletesFail: every delete fails, so each compaction
// leaves the files it replaced (as a crash between its upload and its
// deletes does). The chain still restores every commit, range merges and
// full merges go on over the left-overs, and a new epoch restores from them
// and continues. The same holds for the retention window's ladder, whose
// only deletions are of what ages out.
func TestCompactionWhoseDeletesFail(t *testing.T) {
	for _, window := range []bool{false, true} {
		t.Run(map[bool]string{false: "range-merges", true: "ladder"}[window], func(t *testing.T) {
			ctx := context.Background()
			mem := memstore.New()
			fs := faultstore.New(mem, faultstore.Config{PerOp: map[faultstore.Op]faultstore.Faults{faultstore.OpDelete: {Fail: 1}}})
			opts := Options{Logger: quiet, Store: fs, CompactAfter: 3, RangeFanout: 2, Retention: -1}
			if window {
				opts = Options{Logger: quiet, Store: fs}
			}
			lg, _ := New(opts)
			d := newPageDB(512, true)
			cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(21, 4))
			for i := 1; i <= 90; i++ {
				d.mutate(r)
				if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
					t.Fatal(err)
				}
				waitCompactor(t, cl.(*cellLog))
				res, err := Restore(ctx, mem, cell, RestoreOptions{})
				if err != nil || res.TXID != ltx.TXID(i) || !bytes.Equal(res.Image, d.image()) {
					t.Fatalf("commit %d: restore %v", i, err)
				}
			}
			cl.Close(ctx, false)
			var full, ranges int
			for _, k := range listKeys(t, mem, "") {
				if f, ok := ltx.ParseKey(k); ok && f.Level == 1 {
					if f.MinTXID == 1 {
						full++
					} else {
						ranges++
					}
				}
			}
			if full < 2 || (!window && ranges < 2) {
				t.Fatalf("%d full files and %d range files left over, want several", full, ranges)
			}
			fresh := newPageDB(512, true)
			cl2, err := lg.Open(ctx, openReq(cell, 2, fresh, true))
			if err != nil {
				t.Fatal(err)
			}
			defer cl2.Close(ctx, true)
			if !bytes.Equal(fresh.image(), d.image()) {
				t.Fatal("the next epoch restored another image")
			}
		})
	}
}

// TestRangeMergeKeepsABrokenChainBroken: commit 5 shrinks the database by
// two pages and commit 6 grows it back without writing them (a chain that
// does not rebuild: the restore fails on the missing pages). The range
// merge over them fails too and leaves the chain as it was, instead of
// storing a file that would let the full file's stale copies of those
// pages pass for the database.
func TestRangeMergeKeepsABrokenChainBroken(t *testing.T) {
	ctx := context.Background()
	b := newWatchedBucket()
	// Range merges only: a full merge checks the whole image already (and
	// no window: its ladder merges runs of 8, the same mergeRange).
	lg, _ := New(Options{Logger: quiet, Store: b, CompactAfter: 3, FullMergePercent: 1 << 20, Retention: -1})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	for range 10 {
		d.pages = append(d.pages, make([]byte, 512))
		d.touch(uint32(len(d.pages)), r)
	}
	// Compactions after commits 3 (files 2-3) and 6 (files 4-6).
	for i := 1; i <= 6; i++ {
		if i < 5 {
			d.mutate(r)
		} else {
			d.touch(1, r)
			d.commit()
		}
		commits, _ := d.TakeCommits(ctx)
		if i == 5 {
			commits[0].PageCount -= 2 // dropped, and never written again
		}
		if err := wait(t, cl.Append(durability.Commit{Seq: uint64(i), Pages: &commits[0]})); err != nil {
			t.Fatal(err)
		}
		if i < 5 {
			waitCompactor(t, cl.(*cellLog))
		}
	}
	// A final close lets the last compaction run to its end.
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if b.written(1) == 0 {
		t.Fatal("the first range merge did not run")
	}
	if _, err := Restore(ctx, b.raw, cell, RestoreOptions{}); err == nil {
		t.Fatal("the uncompacted log restores: the test does not break the chain")
	}
	files, _ := listEpochFiles(ctx, b, cell, 1)
	for _, f := range files {
		if f.Level == 1 && f.MaxTXID == 6 {
			t.Fatalf("a compaction stored %s over a chain that does not restore", f.Key)
		}
	}
	if _, err := Restore(ctx, b, cell, RestoreOptions{}); err == nil {
		t.Fatal("the bucket restores after a compaction over a broken chain")
	}
}

// TestPageSpoolMatchesAMap: random writes and truncations over pages that
// span several of the spool's 65,536-page chunks leave exactly the pages,
// in order and with the contents, a map of the newest copies holds.
func TestPageSpoolMatchesAMap(t *testing.T) {
	const ps = 16
	s, err := newPageSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.setPageSize(ps)
	want := map[uint32][]byte{}
	r := rand.New(rand.NewPCG(8, 8))
	for op := 0; op < 3000; op++ {
		if r.IntN(50) == 0 {
			commit := uint32(r.IntN(3 * spoolChunkPages))
			for pgno := range want { // often just below a page held
				if r.IntN(2) == 0 {
					commit = pgno - 1 + uint32(r.IntN(2))
				}
				break
			}
			s.truncate(commit)
			for pgno := range want {
				if pgno > commit {
					delete(want, pgno)
				}
			}
			continue
		}
		pgno := 1 + uint32(r.IntN(3*spoolChunkPages))
		if r.IntN(4) == 0 { // chunk edges
			pgno = uint32(1+r.IntN(3))*spoolChunkPages + uint32(r.IntN(3)) - 1
		}
		data := make([]byte, ps)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if err := s.put(pgno, data); err != nil {
			t.Fatal(err)
		}
		want[pgno] = data
	}
	next, buf, n := s.pages(), make([]byte, ps), 0
	prev := uint32(0)
	for pgno := next(); pgno != 0; pgno = next() {
		if pgno <= prev {
			t.Fatalf("page %d after page %d", pgno, prev)
		}
		prev = pgno
		if err := s.read(pgno, buf); err != nil || !bytes.Equal(buf, want[pgno]) {
			t.Fatalf("page %d: %v, equal %v (in the map: %v)", pgno, err, bytes.Equal(buf, want[pgno]), want[pgno] != nil)
		}
		if !s.has(pgno) {
			t.Fatalf("page %d listed but not held", pgno)
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("%d pages, the map holds %d", n, len(want))
	}
}
