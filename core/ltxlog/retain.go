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
// for a window of time, each from a bounded number of objects. Compaction then follows a ladder
// instead of the range merges of compact.go:
//
//   - An era starts at a full file (the epoch's snapshot, then each full
//     merge): its anchor, position 0. The level-0 files after it take
//     positions 1, 2, 3, … in TXID order.
//   - At every even position j the compactor writes one level-1 block
//     covering positions (j-w, j], w the lowest set bit of j: the merge
//     of the blocks (and the one level-0 file) that covered (j-w, j-1]
//     with the level-0 file j (a binary counter: each carry is one
//     merge). The level-0 file j is then deleted (the block ends where
//     it ends); level-0 files at odd positions stay, as their own block
//     of weight 1.
//   - The state at position i then restores from the anchor and one block
//     per set bit of i (a Fenwick tree's prefix): at most 1 + 18 objects
//     while an era holds fewer than 2^18 positions, which a full merge
//     (forced there, otherwise due by FullMergePercent as before) keeps
//     true. The restore planner, celld's and Litestream's greedy choice
//     of the file reaching furthest, finds that cover or a shorter one:
//     nothing the reader needs to know.
//   - Nothing a merge replaces is deleted (but level-0 files at even
//     positions): retire deletes what no state of the window needs once
//     it ages out. The window's states are every position whose
//     timestamp is at or after now-Retention, and the newest one before
//     (the state at the window's start). With c that state's position in
//     its era, a block (j-w, j] is needed by some state at or after c
//     exactly when j+w > c; everything of older eras goes, and so do the
//     epochs below the newest one that began before the window (see
//     retireEpochs). Deletions go newest first, so every file still
//     listed restores exactly whatever step a crash stops at.

// ladderMaxPositions is when an era's next compaction is a full merge
// whatever its size: below it, a state restores from at most 19 objects.
const ladderMaxPositions = 1 << 18

// retention is the ladder's bookkeeping, under cellLog.mu.
type retention struct {
	// meta is the header data of level-0 files not placed yet, by
	// MaxTXID: a block's merge needs its predecessor's database size, and
	// retire needs every position's time.
	meta map[ltx.TXID]l0Meta
	// eras, oldest first: the last is the current one (the chain's).
	eras []*era
	// start is the timestamp of the epoch's first state (its first
	// era's anchor); epochsChecked is when retireEpochs last ran.
	start         int64
	epochsChecked time.Time
}

type l0Meta struct {
	commit uint32
	ts     int64
}

// era is an anchor and the files placed after it.
type era struct {
	anchor   ltx.FileInfo
	anchorTS int64
	files    []ladderFile // by position
}

// ladderFile is a file of an era covering positions (end-weight, end].
type ladderFile struct {
	level       int
	min, max    ltx.TXID
	end, weight int
	ts          int64
}

func (e *era) positions() int {
	if len(e.files) == 0 {
		return 0
	}
	return e.files[len(e.files)-1].end
}

// retaining reports whether the log keeps a retention window.
func (c *cellLog) retaining() bool { return c.ret != nil }

// noteL0Locked records a level-0 file's header data for the ladder
// (caller holds c.mu).
func (c *cellLog) noteL0Locked(h ltx.Header) {
	if c.ret != nil && c.opts.CompactAfter > 0 {
		c.ret.meta[h.MaxTXID] = l0Meta{commit: h.Commit, ts: h.Timestamp}
	}
}

// newEraLocked starts an era at a new full file (caller holds c.mu).
func (c *cellLog) newEraLocked(anchor ltx.FileInfo, ts int64) {
	if c.ret != nil {
		c.ret.eras = append(c.ret.eras, &era{anchor: anchor, anchorTS: ts})
	}
}

// compactLadder places the level-0 run l0 on the ladder after the chain's
// anchor full and its blocks ranges (the blocks of the current position's
// set bits, highest first), then runs a full merge if one is due, then
// retires what aged out.
func (c *cellLog) compactLadder(ctx context.Context, full *ltx.FileInfo, fullCommit uint32, ranges []rangeFile, l0 []ltx.FileInfo) error {
	c.mu.Lock()
	if len(c.ret.eras) == 0 {
		c.ret.start = c.ret.meta[full.MaxTXID].ts
		c.ret.eras = append(c.ret.eras, &era{anchor: *full, anchorTS: c.ret.start})
		delete(c.ret.meta, full.MaxTXID)
	}
	cur := c.ret.eras[len(c.ret.eras)-1]
	c.mu.Unlock()
	maxPos := ladderMaxPositions
	if c.opts.eraPositions > 0 {
		maxPos = c.opts.eraPositions
	}
	for _, f := range l0 {
		if cur.positions() >= maxPos {
			break // the era is full: the rest waits for the next one
		}
		c.mu.Lock()
		m, ok := c.ret.meta[f.MaxTXID]
		c.mu.Unlock()
		if !ok {
			h, err := readHeader(ctx, c.opts.Store, f.Key)
			if err != nil {
				return err
			}
			m = l0Meta{commit: h.Commit, ts: h.Timestamp}
		}
		pos := cur.positions() + 1
		w, j := 1, len(ranges)
		for j > 0 && ranges[j-1].weight == w {
			w *= 2
			j--
		}
		if j == len(ranges) {
			// An odd position: the level-0 file is its own block.
			ranges = append(ranges, rangeFile{FileInfo: f, commit: m.commit, weight: 1, ts: m.ts})
			c.mu.Lock()
			c.chain.ranges = slices.Clone(ranges)
			c.dropCompactedL0(f.MaxTXID)
			delete(c.ret.meta, f.MaxTXID)
			cur.files = append(cur.files, ladderFile{level: 0, min: f.MinTXID, max: f.MaxTXID, end: pos, weight: 1, ts: m.ts})
			c.mu.Unlock()
			continue
		}
		prevCommit, prevMax := fullCommit, full.MaxTXID
		if j > 0 {
			prevCommit, prevMax = ranges[j-1].commit, ranges[j-1].MaxTXID
		}
		var inputs []ltx.FileInfo
		for _, r := range ranges[j:] {
			inputs = append(inputs, r.FileInfo)
		}
		inputs = append(inputs, f)
		nr, n, err := c.mergeRange(ctx, prevCommit, prevMax, inputs)
		if err != nil {
			return err
		}
		nr.weight = w
		ranges = append(ranges[:j:j], nr)
		c.mu.Lock()
		c.chain.ranges = slices.Clone(ranges)
		c.dropCompactedL0(f.MaxTXID)
		delete(c.ret.meta, f.MaxTXID)
		cur.files = append(cur.files, ladderFile{level: 1, min: nr.MinTXID, max: nr.MaxTXID, end: pos, weight: w, ts: nr.ts})
		c.mu.Unlock()
		// The block ends where the level-0 file ends, so no state needs
		// the level-0 file any more.
		c.deleteReplaced(ctx, []ltx.FileInfo{f}, nr.Key)
		c.log.Debug("compacted LTX block", "key", nr.Key, "inputs", len(inputs), "pages", n, "bytes", nr.Size)
	}
	if c.fullMergeDue(full, ranges, nil) || cur.positions() >= maxPos {
		if err := c.compactFull(ctx, full, ranges, nil); err != nil {
			return err
		}
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
	var gone []string
	if ec >= 0 {
		// Older eras: newest files first, the anchor last (unless it is
		// the current chain's, which it never is for an older era).
		for _, er := range c.ret.eras[:ec] {
			for i := len(er.files) - 1; i >= 0; i-- {
				gone = append(gone, c.ladderKey(er.files[i]))
			}
			gone = append(gone, er.anchor.Key)
		}
		er := c.ret.eras[ec]
		var kept []ladderFile
		for i := len(er.files) - 1; i >= 0; i-- {
			f := er.files[i]
			if f.end+f.weight <= pc {
				gone = append(gone, c.ladderKey(f))
			} else {
				kept = append(kept, f)
			}
		}
		slices.Reverse(kept)
		er.files = kept
		c.ret.eras = slices.Clone(c.ret.eras[ec:])
	}
	now := c.opts.Clock.Now()
	checkEpochs := now.Sub(c.ret.epochsChecked) >= time.Hour
	if checkEpochs {
		c.ret.epochsChecked = now
	}
	selfOld := c.ret.start <= cutoff
	c.mu.Unlock()
	for _, key := range gone {
		if err := c.opts.Store.Delete(ctx, key); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("could not delete an LTX file older than the retention window", "key", key, "err", err)
		}
	}
	if len(gone) > 0 {
		c.log.Debug("retired LTX files older than the retention window", "files", len(gone))
	}
	if checkEpochs {
		c.retireEpochs(ctx, cutoff, selfOld)
	}
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
