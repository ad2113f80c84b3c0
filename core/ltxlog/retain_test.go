package ltxlog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// countingStore counts, since its last reset, the distinct objects read
// (whole or ranged GETs), the reads, the listings, and the bytes written
// per LTX level.
type countingStore struct {
	store.Store
	mu      sync.Mutex
	keys    map[string]bool
	reads   int
	lists   int
	written map[int]int64 // by level
	files   map[int]int   // files written, by level
	// l0 counts the level-0 files written, by cell.
	l0 map[string]int
}

func newCountingStore() *countingStore {
	return &countingStore{Store: memstore.New(), keys: map[string]bool{}, written: map[int]int64{}}
}

func (c *countingStore) read(key string) {
	c.mu.Lock()
	c.keys[key] = true
	c.reads++
	c.mu.Unlock()
}

func (c *countingStore) Get(ctx context.Context, key string) (*store.Object, error) {
	c.read(key)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	c.read(key)
	return store.NewRangeReader(ctx, c.Store, key, offset, length)
}

func (c *countingStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	c.wrote(key, int64(len(data)))
	return c.Store.Put(ctx, key, data, opts)
}

func (c *countingStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	data, err := store.ReadBody(ctx, "put", key, r, size)
	if err != nil {
		return "", err
	}
	return c.Put(ctx, key, data, opts)
}

func (c *countingStore) wrote(key string, n int64) {
	if f, ok := ltx.ParseKey(key); ok {
		c.mu.Lock()
		c.written[f.Level] += n
		if c.files == nil {
			c.files = map[int]int{}
		}
		c.files[f.Level]++
		if f.Level == 0 {
			if c.l0 == nil {
				c.l0 = map[string]int{}
			}
			c.l0[f.Cell]++
		}
		c.mu.Unlock()
	}
}

// l0Puts is the level-0 files written for cell (its epochs' snapshots
// included).
func (c *countingStore) l0Puts(cell string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.l0[cell]
}

func (c *countingStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.Store.List(ctx, opts)
}

// reset returns the distinct objects read, the reads and the listings
// since the last reset.
func (c *countingStore) reset() (objects, reads, lists int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	objects, reads, lists = len(c.keys), c.reads, c.lists
	c.keys, c.reads, c.lists = map[string]bool{}, 0, 0
	return objects, reads, lists
}

// kept is the bytes and objects of the cell's LTX files in the bucket.
func (c *countingStore) kept(t testing.TB, prefix string) (bytes int64, objects int) {
	page, err := store.ListAll(context.Background(), c.Store, store.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Objects {
		bytes += o.Size
		objects++
	}
	return bytes, objects
}

// retainedState is one durable state of a simulated history.
type retainedState struct {
	b   durability.Bookmark
	at  time.Time
	sum [32]byte
}

// retainHistory is a simulated history: a database of 64 pages and
// more, whose commits each change a few pages, written by epoch 3 for
// its first two days and by epoch 4 (which restores epoch 3's state)
// after, over days days; commits are spread evenly.
type retainHistory struct {
	s        *countingStore
	states   []retainedState
	end      time.Time
	l0Bytes  int64 // level-0 bytes uploaded
	commits  int
	l1Writes int64
}

var retainStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func runRetainHistory(t testing.TB, opts Options, commits int, days int) *retainHistory {
	ctx := context.Background()
	s := newCountingStore()
	clk := clock.NewFake(retainStart)
	opts.Logger, opts.Store, opts.Clock = quiet, s, clk
	if opts.SpoolDir == "" {
		opts.SpoolDir = t.TempDir()
	}
	lg, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &retainHistory{s: s, commits: commits}
	r := rand.New(rand.NewPCG(23, 6))
	step := time.Duration(days) * 24 * time.Hour / time.Duration(commits)
	epoch3 := commits * 2 / days // two days of epoch 3
	d := newPageDB(512, true)
	var cl durability.CellLog
	var seq uint64
	for i := 0; i < commits; i++ {
		if i == 0 || i == epoch3 {
			epoch := uint64(3)
			if i > 0 {
				if err := cl.Close(ctx, true); err != nil {
					t.Fatal(err)
				}
				epoch = 4
				d = newPageDB(512, true)
			}
			cl, err = lg.Open(ctx, openReq(cell, epoch, d, i > 0))
			if err != nil {
				t.Fatal(err)
			}
			seq = 0
		}
		clk.Set(retainStart.Add(time.Duration(i) * step))
		retainMutate(d, r)
		seq++
		if err := wait(t, appendCommit(t, cl, d, seq)); err != nil {
			t.Fatal(err)
		}
		if i%64 == 0 {
			waitCompactor(t, cl.(*cellLog))
		}
		b, ok := cl.(durability.DurableBookmarker).DurableBookmark()
		if !ok {
			t.Fatal("no durable bookmark after a commit")
		}
		h.states = append(h.states, retainedState{b: b, at: clk.Now(), sum: sha256.Sum256(d.image())})
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	h.end = clk.Now()
	h.l0Bytes, h.l1Writes = s.written[0], s.written[1]
	s.reset()
	return h
}

// retainMutate changes one or two pages and page 1; now and then the
// database grows by a page, or shrinks by one or two.
func retainMutate(d *pageDB, r *rand.Rand) {
	if len(d.pages) == 0 {
		for i := 0; i < 64; i++ {
			d.pages = append(d.pages, make([]byte, d.pageSize))
			d.touch(uint32(len(d.pages)), r)
		}
	}
	switch n := len(d.pages); {
	case r.IntN(40) == 0:
		d.pages = append(d.pages, make([]byte, d.pageSize))
		d.touch(uint32(n+1), r)
	case n > 48 && r.IntN(150) == 0:
		d.pages = d.pages[:n-1-r.IntN(2)]
	}
	for k := 0; k < 1+r.IntN(2); k++ {
		d.touch(uint32(1+r.IntN(len(d.pages))), r)
	}
	d.touch(1, r)
	d.commit()
}

// restoreCounted restores b and reports the objects it read and the
// listings it made.
func (h *retainHistory) restoreCounted(t testing.TB, b durability.Bookmark) (sum [32]byte, objects, lists int, err error) {
	h.s.reset()
	res, err := Restore(context.Background(), h.s, cell, RestoreOptions{Epoch: b.Epoch, TXID: ltx.TXID(b.TXID)})
	objects, _, lists = h.s.reset()
	if err != nil {
		return sum, objects, lists, err
	}
	return sha256.Sum256(res.Image), objects, lists, nil
}

// stateAt is the newest state at or before t.
func (h *retainHistory) stateAt(t time.Time) (retainedState, bool) {
	i := sort.Search(len(h.states), func(i int) bool { return h.states[i].at.After(t) })
	if i == 0 {
		return retainedState{}, false
	}
	return h.states[i-1], true
}

// TestRetentionRestoresEveryBookmarkOfTheWindow: 40 simulated days of
// commits (a fake clock; an epoch change on day 2; hundreds of
// compactions, one per run of 8 uploads), then every bookmark the log
// gave within the 30-day window — sampled, and those of 1 hour, 1 day and
// 29 days ago — restores its exact state from at most 20 objects, and
// BookmarkForTime names the state of each of those times; states older
// than the window are gone, and so is the older epoch. Eras end by size
// (the default full-merge rule) or only by run count (a deep ladder).
func TestRetentionRestoresEveryBookmarkOfTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"size-eras", Options{}},
		{"deep-ladder", Options{FullMergePercent: 1 << 20, eraRuns: 190}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := runRetainHistory(t, tc.opts, 4000, 40)
			windowStart := h.end.Add(-DefaultRetention)
			maxObjects, maxLists, checked := 0, 0, 0
			check := func(st retainedState, what string) int {
				sum, objects, lists, err := h.restoreCounted(t, st.b)
				if err != nil || sum != st.sum {
					t.Fatalf("%s: bookmark %s of %s does not restore its state: %v", what, st.b, st.at, err)
				}
				if objects > 20 {
					t.Fatalf("%s: bookmark %s read %d objects, want at most 20", what, st.b, objects)
				}
				maxObjects, maxLists = max(maxObjects, objects), max(maxLists, lists)
				checked++
				return objects
			}
			for i, st := range h.states {
				if st.at.Before(windowStart) {
					continue
				}
				if i%9 == 0 || i == len(h.states)-1 {
					check(st, "sampled")
				}
			}
			for _, age := range []time.Duration{time.Hour, 24 * time.Hour, 29 * 24 * time.Hour} {
				at := h.end.Add(-age)
				want, _ := h.stateAt(at)
				h.s.reset()
				b, err := BookmarkForTime(ctx, h.s, cell, at)
				_, reads, lists := h.s.reset()
				if err != nil || b != want.b {
					t.Fatalf("bookmark for %v ago: %s, %v; want %s", age, b, err, want.b)
				}
				n := check(want, "for "+age.String()+" ago")
				// A restore by time (cellb restore --time) reaches it too.
				res, err := Restore(ctx, h.s, cell, RestoreOptions{Time: at})
				if err != nil || res.TXID != ltx.TXID(want.b.TXID) || res.Epoch != want.b.Epoch || sha256.Sum256(res.Image) != want.sum {
					t.Fatalf("restore by the time of %v ago: %v", age, err)
				}
				t.Logf("%v ago: BookmarkForTime %d reads %d listings; restore of %s read %d objects", age, reads, lists, b, n)
			}
			// The state at the window's start is kept; older ones of
			// epoch 4 are gone, and epoch 3 with them.
			first, _ := h.stateAt(windowStart)
			check(first, "the window's start")
			gone := 0
			for _, st := range h.states {
				if st.at.Before(windowStart.Add(-24*time.Hour)) && st.b.Epoch == 4 && st.b.TXID%17 == 0 {
					if _, _, _, err := h.restoreCounted(t, st.b); err == nil {
						t.Fatalf("bookmark %s of %s, older than the window, still restores", st.b, st.at)
					}
					gone++
				}
			}
			if gone == 0 {
				t.Fatal("no state older than the window was checked")
			}
			if _, n := h.s.kept(t, ltx.EpochPrefix(cell, 3)); n != 0 {
				t.Fatalf("epoch 3 still holds %d files, all older than the window", n)
			}
			bytesKept, objectsKept := h.s.kept(t, ltx.CellPrefix(cell))
			t.Logf("%d states checked: at most %d objects and %d listings a restore; %d objects (%d bytes) kept; level-1 bytes written per level-0 byte %.2f",
				checked, maxObjects, maxLists, objectsKept, bytesKept, float64(h.l1Writes)/float64(h.l0Bytes))
		})
	}
}

// Without a retention window (the compaction that deletes what it
// merges) a bookmark of 29 days ago no longer restores: the test above
// depends on the window.
func TestWithoutRetentionOldBookmarksAreGone(t *testing.T) {
	h := runRetainHistory(t, Options{Retention: -1, CompactAfter: 2}, 1200, 40)
	want, _ := h.stateAt(h.end.Add(-29 * 24 * time.Hour))
	_, _, _, err := h.restoreCounted(t, want.b)
	var ne *ltx.TXIDNotRestorableError
	if !errors.As(err, &ne) {
		t.Fatalf("restore of a bookmark of 29 days ago without retention: %v, want *ltx.TXIDNotRestorableError", err)
	}
}

// A history shorter than the window deletes nothing, not even the run's
// last level-0 file, whose end the run's block (or full merge) ends at
// too: every state restores.
func TestRetentionKeepsEveryStateOfAShortHistory(t *testing.T) {
	h := runRetainHistory(t, Options{CompactAfter: 2}, 600, 6)
	for _, st := range h.states {
		sum, objects, _, err := h.restoreCounted(t, st.b)
		if err != nil || sum != st.sum || objects > 20 {
			t.Fatalf("bookmark %s of %s: %v (%d objects)", st.b, st.at, err, objects)
		}
	}
	if _, n := h.s.kept(t, ltx.EpochPrefix(cell, 3)); n == 0 {
		t.Fatal("epoch 3 was deleted within the window")
	}
	// Every level-0 file stays until it ages out, each run's last too:
	// epoch 4 wrote 400 (its snapshot, then 399 uploads: 49 runs).
	page, _ := store.ListAll(context.Background(), h.s.Store, store.ListOptions{Prefix: ltx.LevelPrefix(cell, 4, 0)})
	if l0 := len(page.Objects); l0 != 400 {
		t.Fatalf("%d level-0 files of epoch 4 kept, want all 400", l0)
	}
}

// TestLadderStepsOverRuns: the ladder's rule, state by state. One epoch
// of 261 uploads after its snapshot, nothing aged out; eras forced at 16
// runs (FullMergePercent too high to decide), so the 16th run of an era
// is merged in full and starts the next era. Then the state at position
// 8r+k of an era (k < 8; the tail of 5 uploads the compactor never
// reached included) restores from exactly 1 + popcount(r) + k objects:
// the era's anchor, a block per set bit of r, the run's first k level-0
// files; and compaction wrote one level-1 file per run, not one per two
// uploads. In a database of a few pages, where the full-merge rule
// decides at nearly every run, a run still costs one level-1 file: the
// full merge takes the block's place.
func TestLadderStepsOverRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		pages int
	}{
		{"deep-eras", Options{FullMergePercent: 1 << 20, eraRuns: 16}, 64},
		{"small-database", Options{}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newCountingStore()
			clk := clock.NewFake(retainStart)
			opts := tc.opts
			opts.Logger, opts.Store, opts.Clock, opts.SpoolDir = quiet, s, clk, t.TempDir()
			lg, _ := New(opts)
			d := newPageDB(512, true)
			for range tc.pages {
				d.pages = append(d.pages, make([]byte, 512))
			}
			cl, err := lg.Open(ctx, openReq(cell, 2, d, false))
			if err != nil {
				t.Fatal(err)
			}
			const uploads = 2*16*ladderRun + 5
			r := rand.New(rand.NewPCG(8, 8))
			var states []retainedState
			for i := 0; i <= uploads; i++ {
				clk.Set(retainStart.Add(time.Duration(i) * time.Minute))
				for k := 0; k < 1+r.IntN(2); k++ {
					d.touch(uint32(1+r.IntN(len(d.pages))), r)
				}
				d.touch(1, r)
				d.commit()
				if err := wait(t, appendCommit(t, cl, d, uint64(i+1))); err != nil {
					t.Fatal(err)
				}
				if i%16 == 0 {
					waitCompactor(t, cl.(*cellLog))
				}
				b, _ := cl.(durability.DurableBookmarker).DurableBookmark()
				states = append(states, retainedState{b: b, at: clk.Now(), sum: sha256.Sum256(d.image())})
			}
			if err := cl.Close(ctx, true); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			l1 := s.files[1]
			s.mu.Unlock()
			if runs := uploads / ladderRun; l1 != runs {
				t.Fatalf("compaction wrote %d level-1 files for %d runs of %d uploads, want one per run", l1, runs, ladderRun)
			}
			h := &retainHistory{s: s}
			worst := 0
			for p, st := range states {
				sum, objects, _, err := h.restoreCounted(t, st.b)
				if err != nil || sum != st.sum {
					t.Fatalf("position %d (bookmark %s) does not restore its state: %v", p, st.b, err)
				}
				worst = max(worst, objects)
				if tc.opts.eraRuns == 0 {
					if objects > 1+ladderRun {
						t.Fatalf("position %d read %d objects, want at most %d", p, objects, 1+ladderRun)
					}
					continue
				}
				q := p % (16 * ladderRun)
				if want := 1 + bits.OnesCount(uint(q/ladderRun)) + q%ladderRun; objects != want {
					t.Fatalf("position %d (run %d, +%d) read %d objects, want %d", p, q/ladderRun, q%ladderRun, objects, want)
				}
			}
			t.Logf("%d uploads: %d level-1 files written; at most %d objects a restore", uploads, l1, worst)
		})
	}
}

// BenchmarkRetention measures the retention window on the history of the
// tests above (100 commits a day for 40 days, 64-page database, 512-byte
// pages): objects and listings a restore of a bookmark of 1 hour, 1 day
// and 29 days ago reads, BookmarkForTime's reads, the bytes the bucket
// keeps with the window and without it, and the bytes compaction writes
// per byte of level-0 files. One history per run, whatever b.N is:
//
//	go test -run '^$' -bench Retention -benchtime 1x ./core/ltxlog/
func BenchmarkRetention(b *testing.B) {
	for range b.N {
		with := runRetainHistory(b, Options{}, 4000, 40)
		without := runRetainHistory(b, Options{Retention: -1, CompactAfter: 2}, 4000, 40)
		for _, age := range []struct {
			name string
			d    time.Duration
		}{{"1h", time.Hour}, {"1d", 24 * time.Hour}, {"29d", 29 * 24 * time.Hour}} {
			st, _ := with.stateAt(with.end.Add(-age.d))
			_, objects, lists, err := with.restoreCounted(b, st.b)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(objects), "objects-"+age.name)
			b.ReportMetric(float64(lists), "lists-"+age.name)
			with.s.reset()
			if _, err := BookmarkForTime(context.Background(), with.s, cell, with.end.Add(-age.d)); err != nil {
				b.Fatal(err)
			}
			_, reads, _ := with.s.reset()
			b.ReportMetric(float64(reads), "bookmark-reads-"+age.name)
		}
		kept, objs := with.s.kept(b, ltx.CellPrefix(cell))
		keptWithout, objsWithout := without.s.kept(b, ltx.CellPrefix(cell))
		b.ReportMetric(float64(kept), "bytes-kept")
		b.ReportMetric(float64(objs), "objects-kept")
		b.ReportMetric(float64(keptWithout), "bytes-kept-no-retention")
		b.ReportMetric(float64(objsWithout), "objects-kept-no-retention")
		b.ReportMetric(float64(with.l0Bytes), "level0-bytes")
		b.ReportMetric(float64(with.l1Writes)/float64(with.l0Bytes), "compaction-bytes/level0-byte")
		b.ReportMetric(float64(without.l1Writes)/float64(without.l0Bytes), "compaction-bytes/level0-byte-no-retention")
	}
}

// With the node log and a retention window, tiering merges a cell's rows
// (a PUT per many rows), and every bookmark named exactly restores all
// the same: each one CurrentBookmark names (PinDurableBookmark: the rows
// up to it tiered first, as a file of their own) and each one
// BookmarkForTime answers (PinBookmark: the same for a row still in a
// bundle) restores its exact state from the cell's prefix alone, at once
// and after the cell closed, through the ladder's merges, from at most 20
// objects.
func TestRetentionWithTheNodeLog(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	rec := newNodeRecord(t, mem, "node_a")
	own(t, mem, cell, "node_a", 3)
	s := &countingStore{Store: mem, keys: map[string]bool{}, written: map[int]int64{}}
	clk := clock.NewFake(retainStart)
	nl := newNodeLog(t, s, rec, nodelog.Options{TierAge: 1000 * time.Hour})
	const rows, tierAfter, pinEvery = 124, 16, 7
	lg, _ := New(Options{Logger: quiet, Store: s, Clock: clk, NodeLog: nl, TierAfterRows: tierAfter})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 3, d, false))
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*cellLog)
	r := rand.New(rand.NewPCG(23, 7))
	// every is each commit's state, by TXID; named, the bookmarks pinned.
	every := map[uint64]retainedState{}
	var named, answered []retainedState
	h := &retainHistory{s: s}
	check := func(what string, st retainedState) {
		t.Helper()
		sum, objects, _, err := h.restoreCounted(t, st.b)
		if err != nil || sum != st.sum || objects > 20 {
			t.Fatalf("%s: bookmark %s: %v (%d objects)", what, st.b, err, objects)
		}
	}
	// forTime checks BookmarkForTime at some instants: the state it names
	// is the newest file end at or before the instant, and restores.
	forTime := func(what string) {
		t.Helper()
		instants := []int{len(every) - 3, len(every) - 1}
		for i := 3; i <= len(every); i += 11 {
			instants = append(instants, i)
		}
		for _, i := range instants {
			at := retainStart.Add(time.Duration(i)*time.Hour + 30*time.Minute)
			// As State.BookmarkForTime asks it: a row still in a
			// bundle is tiered first.
			b, err := c.PinBookmark(ctx, func(ctx context.Context) (durability.Bookmark, error) {
				return BookmarkForTime(ctx, s, cell, at)
			})
			if err != nil {
				t.Fatalf("%s: bookmark for %v: %v", what, at, err)
			}
			st, ok := every[b.TXID]
			if !ok || b.Epoch != 3 || st.at.After(at) {
				t.Fatalf("%s: bookmark for %v is %s, not a state of then", what, at, b)
			}
			check(what+" (BookmarkForTime)", st)
			answered = append(answered, st)
		}
	}
	for i := 1; i <= rows; i++ {
		clk.Set(retainStart.Add(time.Duration(i) * time.Hour))
		retainMutate(d, r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
		b, _ := c.DurableBookmark()
		st := retainedState{b: b, at: clk.Now(), sum: sha256.Sum256(d.image())}
		every[b.TXID] = st
		if i%pinEvery == 0 {
			pb, ok, err := c.PinDurableBookmark(ctx)
			if err != nil || !ok || pb != b {
				t.Fatalf("commit %d: pinned %s, %v, %v; want %s", i, pb, ok, err, b)
			}
			named = append(named, st)
			// At once, while later rows are in bundles.
			check("pinned, cell open", st)
		}
		if i%16 == 0 {
			waitCompactor(t, c)
		}
	}
	for _, st := range named {
		check("pinned, cell open", st)
	}
	forTime("cell open")
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, st := range named {
		check("pinned, cell closed", st)
	}
	for _, st := range answered {
		check("answered while open, cell closed", st)
	}
	forTime("cell closed")
	// Tiering merged: a file per TierAfterRows rows, one per pin, and the
	// last tiering at Close; not one per row.
	if want := rows/tierAfter + rows/pinEvery + 1; s.l0Puts(cell) > want {
		t.Fatalf("%d level-0 files written to the cell's prefix for %d rows, want at most %d", s.l0Puts(cell), rows, want)
	}
	t.Logf("%d rows, %d bookmarks pinned: %d level-0 files written", rows, len(named), s.l0Puts(cell))
}

// checkingStore checks, before every third deletion of an LTX file, that
// the cell's newest chain plans and that sampled file ends of the epoch
// being written still plan exactly (PlanTo): a crash before any deletion
// would leave a bucket every listed state restores from.
type checkingStore struct {
	*countingStore
	t       testing.TB
	epoch   uint64
	n       int
	checked int
	r       *rand.Rand
	failed  error
}

func (c *checkingStore) Delete(ctx context.Context, key string) error {
	c.mu.Lock()
	c.n++
	due := c.n%3 == 0 && c.failed == nil
	c.mu.Unlock()
	if due {
		if err := c.check(ctx); err != nil {
			c.mu.Lock()
			c.failed = fmt.Errorf("before deleting %s: %w", key, err)
			c.mu.Unlock()
		}
	}
	return c.countingStore.Delete(ctx, key)
}

func (c *checkingStore) check(ctx context.Context) error {
	files, err := listEpochFiles(ctx, c.countingStore.Store, cell, c.epoch)
	if err != nil || len(files) == 0 {
		return err
	}
	if _, err := ltx.Plan(files); err != nil {
		return fmt.Errorf("the newest chain: %w", err)
	}
	c.mu.Lock()
	picks := make([]int, 8)
	for i := range picks {
		picks[i] = c.r.IntN(len(files))
	}
	c.checked++
	c.mu.Unlock()
	for _, i := range picks {
		if _, err := ltx.PlanTo(files, files[i].MaxTXID); err != nil {
			return fmt.Errorf("the end of %s: %w", files[i].Key, err)
		}
	}
	return nil
}

// Every deletion — of a level-0 file a block replaced, of a block or full
// file that aged out — leaves a bucket whose newest chain and listed file
// ends all restore: the log deletes nothing a listed state needs before
// it, whatever step a crash stops at.
func TestRetentionDeletesLeaveEveryListedStateRestorable(t *testing.T) {
	ctx := context.Background()
	cs := &checkingStore{countingStore: newCountingStore(), t: t, epoch: 5, r: rand.New(rand.NewPCG(5, 5))}
	clk := clock.NewFake(retainStart)
	lg, _ := New(Options{Logger: quiet, Store: cs, Clock: clk, SpoolDir: t.TempDir(), Retention: 5 * 24 * time.Hour})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 5, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 1; i <= 900; i++ {
		clk.Set(retainStart.Add(time.Duration(i) * 15 * time.Minute))
		retainMutate(d, r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			waitCompactor(t, cl.(*cellLog))
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if cs.failed != nil {
		t.Fatal(cs.failed)
	}
	if cs.checked < 100 {
		t.Fatalf("only %d checks ran", cs.checked)
	}
	// The window (5 days of the 9.4 simulated) did age files out.
	res, err := Restore(ctx, cs.countingStore, cell, RestoreOptions{})
	if err != nil || res.TXID != 900 {
		t.Fatalf("newest restore: %v", err)
	}
	if _, err := Restore(ctx, cs.countingStore, cell, RestoreOptions{Epoch: 5, TXID: 11}); err == nil {
		t.Fatal("a state older than the window still restores: nothing aged out")
	}
}

// A cell activated under a new epoch every three days (short epochs, as
// fleet and shard-lock activations make): once an epoch's snapshot is
// older than the window, every epoch below it goes, though the epoch
// writing is younger than the window; every state of the window still
// restores exactly.
func TestRetentionRetiresShortEpochs(t *testing.T) {
	ctx := context.Background()
	s := newCountingStore()
	clk := clock.NewFake(retainStart)
	lg, _ := New(Options{Logger: quiet, Store: s, Clock: clk, SpoolDir: t.TempDir()})
	r := rand.New(rand.NewPCG(7, 7))
	var states []retainedState
	at := retainStart
	for epoch := uint64(1); epoch <= 12; epoch++ {
		d := newPageDB(512, true)
		cl, err := lg.Open(ctx, openReq(cell, epoch, d, epoch > 1))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 30; i++ {
			clk.Set(at)
			at = at.Add(3 * 24 * time.Hour / 30)
			retainMutate(d, r)
			if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
				t.Fatal(err)
			}
			b, _ := cl.(durability.DurableBookmarker).DurableBookmark()
			states = append(states, retainedState{b: b, at: clk.Now(), sum: sha256.Sum256(d.image())})
		}
		if err := cl.Close(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	h := &retainHistory{s: s, states: states, end: clk.Now()}
	windowStart := h.end.Add(-DefaultRetention)
	first, _ := h.stateAt(windowStart)
	for _, st := range states {
		if st.at.Before(first.at) {
			continue
		}
		sum, objects, _, err := h.restoreCounted(t, st.b)
		if err != nil || sum != st.sum || objects > 20 {
			t.Fatalf("bookmark %s of %s: %v (%d objects)", st.b, st.at, err, objects)
		}
	}
	epochs, err := listEpochs(ctx, s, cell)
	if err != nil {
		t.Fatal(err)
	}
	if oldest := epochs[len(epochs)-1]; oldest != first.b.Epoch {
		t.Fatalf("oldest epoch kept %d (of %v); the window starts in epoch %d", oldest, epochs, first.b.Epoch)
	}
}
