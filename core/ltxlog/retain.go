package ltxlog

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// Retention (Options.Retention) keeps every state the log made durable as
// a file — every level-0 file's end (an upload's; with a node log a
// tiering's, or the file a bookmark's pin wrote: PinDurableBookmark), which
// is what CurrentBookmark and BookmarkForTime name — restorable exactly
// for a window of time, each from at most 20 objects. Compaction then
// follows a ladder over runs of level-0 files instead of the range merges
// of compact.go:
//
//   - An era starts at a full file (the epoch's snapshot, then each full
//     merge): its anchor. The level-0 files after it take positions 1, 2,
//     3, … in TXID order, and go in runs of ladderRun (8): run r is
//     positions (8(r-1), 8r].
//   - Once a run is complete the compactor writes one level-1 block
//     covering runs (r-w, r], w the lowest set bit of r: the merge of the
//     blocks that covered runs (r-w, r-1] (the chain's tail) with the
//     run's level-0 files (a binary counter over runs: each carry is one
//     merge). The run's level-0 files all stay: the states inside the run
//     restore from its first seven, and the last, whose end the block
//     ends at too, stays with them (see "Nothing a merge replaces" below).
//   - The state at position 8r+k (0 ≤ k < 8) then restores from the anchor,
//     one block per set bit of r (a Fenwick tree's prefix) and the first k
//     level-0 files of run r+1: at most 1 + 12 + 7 = 20 objects while an era
//     holds at most 2^12 runs. The restore planner, celld's and
//     Litestream's greedy choice of the file reaching furthest, finds that
//     cover or a shorter one: nothing the reader needs to know.
//   - An era ends at a run whose merge is a full merge instead of a block:
//     due by FullMergePercent as before (the blocks of the chain and the
//     run add up to the full file), or forced at the era's 2^12th run. In
//     a small database that is most runs, where the full merge costs
//     about what the block would have (a block is at most the database).
//   - Nothing a merge replaces is deleted when it is merged: retire
//     deletes what no state of the window needs once it ages out, and only
//     files the ladder tracks. The window's states are every position
//     whose timestamp is at or after now-Retention, and the newest one
//     before (the state at the window's start). With c that state's
//     position in its era, a file is needed by some state at or after c
//     exactly when the positions that use it reach past c
//     (ladderFile.until): a block of runs (r-w, r] serves the positions
//     before 8(r+w), a level-0 file those before its run's end. Everything
//     of older eras goes, and so do the epochs below the newest one that
//     began before the window (see retireEpochs). Deletions go newest
//     first and stop at the first that fails, and a file leaves the
//     bookkeeping only once deleted, so every file still listed restores
//     exactly whatever step a crash or a failed deletion stops at.
//
// The run's last level-0 file used to be deleted as soon as its block was
// stored. That deletion is outside this order: a crash (or a failed or
// cancelled delete) between the block's write and it leaves the file in
// the bucket and out of the bookkeeping, so retire never deletes it, and
// once the window passes its run, retire deletes the level-0 files and
// blocks its end restores from: a listed state (BookmarkForTime can name
// it) that no longer restores. Tracked with its run instead, it goes when
// the run's other level-0 files go, before them and before the blocks its
// end needs.
//
// Against a ladder over single uploads (a block every second upload, and in
// a small database a full merge about every fourth), this writes one
// level-1 file per eight uploads instead of about six, and keeps an eighth
// more objects (eight level-0 files and a block per run, against an upload
// and a block per two).

// ladderRun is how many level-0 files make one step of the ladder: the
// states inside a run restore from up to ladderRun-1 of them.
const ladderRun = 8

// ladderMaxRuns is when an era's next run is merged in full whatever its
// size: below it, a run's position has at most 12 set bits, so a state
// restores from at most 1 + 12 + (ladderRun-1) = 20 objects.
const ladderMaxRuns = 1 << 12

// retention is the ladder's bookkeeping, under cellLog.mu.
type retention struct {
	// ts is the timestamp of level-0 files not placed yet, by MaxTXID:
	// retire needs every position's time.
	ts map[ltx.TXID]int64
	// eras, oldest first: the last is the current one (the chain's).
	eras []*era
	// start is the timestamp of the epoch's first state (its first
	// era's anchor); epochsChecked is when retireEpochs last ran.
	start         int64
	epochsChecked time.Time
}

// era is an anchor and the files placed after it.
type era struct {
	anchor   ltx.FileInfo
	anchorTS int64
	runs     int          // runs placed
	files    []ladderFile // by end
}

// ladderFile is a file of an era ending at position end; the states at
// positions below until (and at or after end) may use it.
type ladderFile struct {
	level      int
	min, max   ltx.TXID
	end, until int
	ts         int64
}

// retaining reports whether the log keeps a retention window.
func (c *cellLog) retaining() bool { return c.ret != nil }

// compactAt is how many level-0 files wait before a compactor starts:
// CompactAfter, and with a retention window at least a run, since the
// ladder places whole runs only.
func (c *cellLog) compactAt() int {
	if c.ret != nil {
		return max(c.opts.CompactAfter, ladderRun)
	}
	return c.opts.CompactAfter
}

// noteL0Locked records a level-0 file's timestamp for the ladder (caller
// holds c.mu).
func (c *cellLog) noteL0Locked(h ltx.Header) {
	if c.ret != nil && c.opts.CompactAfter > 0 {
		c.ret.ts[h.MaxTXID] = h.Timestamp
	}
}

// newEraLocked starts an era at a new full file (caller holds c.mu).
func (c *cellLog) newEraLocked(anchor ltx.FileInfo, ts int64) {
	if c.ret != nil {
		c.ret.eras = append(c.ret.eras, &era{anchor: anchor, anchorTS: ts})
	}
}

// compactLadder places the whole runs of the level-0 files l0 on the
// ladder after the chain's anchor full and its blocks ranges (those of the
// current run count's set bits, highest first), each run as a block or,
// when one is due, a full merge; then it retires what aged out.
func (c *cellLog) compactLadder(ctx context.Context, full *ltx.FileInfo, fullCommit uint32, ranges []rangeFile, l0 []ltx.FileInfo) error {
	c.mu.Lock()
	if len(c.ret.eras) == 0 {
		c.ret.start = c.ret.ts[full.MaxTXID]
		c.ret.eras = append(c.ret.eras, &era{anchor: *full, anchorTS: c.ret.start})
		delete(c.ret.ts, full.MaxTXID)
	}
	c.mu.Unlock()
	maxRuns := ladderMaxRuns
	if c.opts.eraRuns > 0 {
		maxRuns = c.opts.eraRuns
	}
	for ; len(l0) >= ladderRun; l0 = l0[ladderRun:] {
		run := l0[:ladderRun]
		last := run[ladderRun-1]
		c.mu.Lock()
		cur := c.ret.eras[len(c.ret.eras)-1]
		r := cur.runs + 1
		c.mu.Unlock()
		// The run's files stay until the window's start passes the run's
		// end: the states inside the run restore from them, and its last
		// file, whose end the block (or full merge) ends at too, goes with
		// them (retire), not now.
		kept := make([]ladderFile, 0, ladderRun+1)
		for i, f := range run {
			c.mu.Lock()
			ts, ok := c.ret.ts[f.MaxTXID]
			c.mu.Unlock()
			if !ok {
				h, err := readHeader(ctx, c.opts.Store, f.Key)
				if err != nil {
					return err
				}
				ts = h.Timestamp
			}
			kept = append(kept, ladderFile{level: 0, min: f.MinTXID, max: f.MaxTXID, end: (r-1)*ladderRun + i + 1, until: r * ladderRun, ts: ts})
		}
		placed := func() {
			cur.files = append(cur.files, kept...)
			cur.runs = r
			c.dropCompactedL0(last.MaxTXID)
			for _, f := range run {
				delete(c.ret.ts, f.MaxTXID)
			}
		}
		if r >= maxRuns || c.fullMergeDue(full, ranges, run) {
			// The run ends the era: compactFull starts the next one at
			// the run's end.
			if err := c.compactFull(ctx, full, ranges, run); err != nil {
				return err
			}
			c.mu.Lock()
			placed()
			nf := *c.chain.full
			full, fullCommit, ranges = &nf, c.chain.fullCommit, nil
			c.mu.Unlock()
			continue
		}
		// The block of runs (r-w, r]: the chain's blocks lighter than w
		// runs (those of r-1's bits below w) and the run.
		w := r & -r
		j := len(ranges)
		for j > 0 && ranges[j-1].weight < w*ladderRun {
			j--
		}
		prevCommit, prevMax := fullCommit, full.MaxTXID
		if j > 0 {
			prevCommit, prevMax = ranges[j-1].commit, ranges[j-1].MaxTXID
		}
		var inputs []ltx.FileInfo
		for _, b := range ranges[j:] {
			inputs = append(inputs, b.FileInfo)
		}
		inputs = append(inputs, run...)
		nr, n, err := c.mergeRange(ctx, prevCommit, prevMax, inputs)
		if err != nil {
			return err
		}
		nr.weight = w * ladderRun
		ranges = append(ranges[:j:j], nr)
		c.mu.Lock()
		c.chain.ranges = slices.Clone(ranges)
		kept = append(kept, ladderFile{level: 1, min: nr.MinTXID, max: nr.MaxTXID, end: r * ladderRun, until: (r + w) * ladderRun, ts: nr.ts})
		placed()
		c.mu.Unlock()
		c.log.Debug("compacted LTX block", "key", nr.Key, "inputs", len(inputs), "pages", n, "bytes", nr.Size)
	}
	c.retire(ctx)
	return nil
}

// retire deletes the files of this epoch no state of the window needs,
// and, now and then, older epochs (retireEpochs).
func (c *cellLog) retire(ctx context.Context) {
	cutoff := c.opts.Clock.Now().Add(-c.opts.Retention).UnixMilli()
	c.mu.Lock()
	// The state at the window's start: the newest position at or before
	// cutoff (era ec, position pc).
	ec, pc := -1, 0
	for e := len(c.ret.eras) - 1; e >= 0 && ec < 0; e-- {
		er := c.ret.eras[e]
		for i := len(er.files) - 1; i >= 0; i-- {
			if er.files[i].ts <= cutoff {
				ec, pc = e, er.files[i].end
				break
			}
		}
		if ec < 0 && er.anchorTS <= cutoff {
			ec, pc = e, 0
		}
	}
	// gone is what no state of the window needs, in the order it goes:
	// older eras first (each era's states need only its own anchor and
	// files), each era's files newest first and its anchor last, then the
	// files of era ec that no state from pc on uses, newest first. Every
	// file still listed after any prefix of these deletions restores
	// exactly.
	var gone []string
	if ec >= 0 {
		for _, er := range c.ret.eras[:ec] {
			for i := len(er.files) - 1; i >= 0; i-- {
				gone = append(gone, c.ladderKey(er.files[i]))
			}
			gone = append(gone, er.anchor.Key)
		}
		er := c.ret.eras[ec]
		for i := len(er.files) - 1; i >= 0; i-- {
			if f := er.files[i]; f.until <= pc {
				gone = append(gone, c.ladderKey(f))
			}
		}
	}
	now := c.opts.Clock.Now()
	checkEpochs := now.Sub(c.ret.epochsChecked) >= time.Hour
	if checkEpochs {
		c.ret.epochsChecked = now
	}
	selfOld := c.ret.start <= cutoff
	c.mu.Unlock()
	// A file stops being tracked only once it is deleted: the first
	// deletion that fails stops the rest, which stay tracked (and
	// listed, and restorable) for the next retire. A file dropped from
	// the bookkeeping but left in the bucket would stay listed after
	// retire deleted what its end needs.
	deleted := map[string]bool{}
	for _, key := range gone {
		if err := c.opts.Store.Delete(ctx, key); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("could not delete an LTX file older than the retention window; will retry", "key", key, "err", err)
			}
			break
		}
		deleted[key] = true
	}
	if len(deleted) > 0 {
		c.mu.Lock()
		c.forgetLocked(deleted)
		c.mu.Unlock()
		c.log.Debug("retired LTX files older than the retention window", "files", len(deleted))
	}
	if ctx.Err() != nil {
		return // closing: what is left goes with its epoch (retireEpochs)
	}
	if checkEpochs {
		c.retireEpochs(ctx, cutoff, selfOld)
	}
}

// forgetLocked drops the deleted files from the ladder's bookkeeping,
// and the eras left with nothing in the bucket (caller holds c.mu).
func (c *cellLog) forgetLocked(deleted map[string]bool) {
	var eras []*era
	for _, er := range c.ret.eras {
		er.files = slices.DeleteFunc(er.files, func(f ladderFile) bool { return deleted[c.ladderKey(f)] })
		if len(er.files) == 0 && deleted[er.anchor.Key] {
			continue
		}
		eras = append(eras, er)
	}
	c.ret.eras = eras
}

// retireEpochs deletes the cell's epochs below the newest epoch that
// began at or before cutoff (this one when selfOld): that epoch's first
// state is older than the window's start, so every state of the epochs
// below is too, and its chain starts at its own snapshot, needing none of
// them. An older epoch's beginning is its snapshot's timestamp (one ranged
// read), found by a binary search over the epochs (they begin in order);
// an epoch whose snapshot is gone (or a celld epoch that continues an
// older one) counts as not begun in time, which only deletes less. Each
// epoch goes newest file first, so what is left of it still restores
// exactly.
func (c *cellLog) retireEpochs(ctx context.Context, cutoff int64, selfOld bool) {
	epochs, err := listEpochs(ctx, c.opts.Store, c.cell)
	if err != nil {
		c.log.Warn("could not list the cell's epochs to retire old ones", "err", err)
		return
	}
	var below []uint64 // newest first
	for _, e := range epochs {
		if e < c.epoch {
			below = append(below, e)
		}
	}
	if len(below) == 0 {
		return
	}
	base := c.epoch
	if !selfOld {
		i := sort.Search(len(below), func(i int) bool {
			h, err := readHeader(ctx, c.opts.Store, ltx.Key(c.cell, below[i], 0, 1, 1))
			return err == nil && h.MinTXID == 1 && h.Timestamp <= cutoff
		})
		if i == len(below) {
			return
		}
		base = below[i]
	}
	for _, e := range below {
		if e >= base {
			continue
		}
		files, err := listEpochFiles(ctx, c.opts.Store, c.cell, e)
		if err != nil {
			c.log.Warn("could not list an old epoch to retire it", "epoch", e, "err", err)
			return
		}
		sort.SliceStable(files, func(i, j int) bool { return files[i].MaxTXID > files[j].MaxTXID })
		for _, f := range files {
			if err := c.opts.Store.Delete(ctx, f.Key); err != nil && !store.IsNotFound(err) {
				if ctx.Err() == nil {
					c.log.Warn("could not delete an LTX file of an epoch older than the retention window", "key", f.Key, "err", err)
				}
				return
			}
		}
		c.log.Info("retired an LTX epoch older than the retention window", "old_epoch", e, "files", len(files))
	}
}

func (c *cellLog) ladderKey(f ladderFile) string {
	return ltx.Key(c.cell, c.epoch, f.level, f.min, f.max)
}
