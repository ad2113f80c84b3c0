package nodelog

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/ltx"
)

// coverage tracks the credited bundles still in the bucket and, per cell
// and epoch, the highest TXID each holds. A bundle is deleted only once
// every cell in it has covered its rows in its own prefix (Covered), so the
// bucket holds each acknowledged row in a bundle, in a per-cell object, or
// both, at every moment.
//
// Deleting is off the acknowledgement path: a covered bundle is doomed,
// and the doomed are deleted in batches, deleteBatch at a time or once the
// oldest has waited deleteWait, and all of them at Close, up to
// deleteConcurrency Deletes in flight. One Delete per flush, each as soon
// as its bundle was covered, cost the lone writer on a local-files bucket
// about a third of its blocking time: every Delete syncs the directory the
// next bundle's PUT syncs too. A doomed bundle costs nothing but its
// object: its rows are in their cells' prefixes already.
type coverage struct {
	l *Log

	mu       sync.Mutex
	byCell   map[cellEpoch][]cover
	live     map[*bundleRec]struct{}
	doomed   []string    // covered, waiting for their batch
	doomedAt time.Time   // when the oldest of doomed was covered
	timer    clock.Timer // starts doomed's batch deleteWait after doomedAt
	batches  [][]string  // started, not yet taken by the deleter
	wake     chan struct{}
	stopped  bool
	done     chan struct{}
}

// The deletion batches: a batch starts once deleteBatch bundles are doomed
// or the oldest doomed one has waited deleteWait (on the log's clock), and
// its Deletes run deleteConcurrency at a time.
const (
	deleteBatch       = 32
	deleteWait        = 2 * time.Second
	deleteConcurrency = 16
)

type cellEpoch struct {
	cell  string
	epoch uint64
}

type bundleRec struct {
	key      string
	left     int // cells whose rows in it are not covered yet
	credited time.Time
}

type cover struct {
	rec *bundleRec
	max ltx.TXID
}

func newCoverage(l *Log) *coverage {
	c := &coverage{l: l, byCell: map[cellEpoch][]cover{}, live: map[*bundleRec]struct{}{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.deleter()
	return c
}

// add registers a credited bundle.
func (c *coverage) add(f *flush) {
	maxes := map[cellEpoch]ltx.TXID{}
	for _, s := range f.subs {
		for _, r := range s.rows {
			k := cellEpoch{r.Cell, r.CellEpoch}
			maxes[k] = max(maxes[k], r.TXID)
		}
	}
	rec := &bundleRec{key: f.key, left: len(maxes), credited: c.l.clk.Now()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[rec] = struct{}{}
	for k, m := range maxes {
		c.byCell[k] = append(c.byCell[k], cover{rec, m})
	}
}

// Covered tells the log that the cell's own prefix holds every row of
// epoch up to txid: a bundle whose every row is covered so is deleted.
func (l *Log) Covered(cell string, epoch uint64, txid ltx.TXID) {
	l.gc.covered(cellEpoch{cell, epoch}, txid)
}

// Done tells the log that the cell's epoch needs none of its bundle rows
// any more: the cell tiered every row it acknowledged and is released (rows
// credited after that were acknowledged to no one).
func (l *Log) Done(cell string, epoch uint64) {
	l.gc.covered(cellEpoch{cell, epoch}, math.MaxUint64)
}

func (c *coverage) covered(k cellEpoch, txid ltx.TXID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	covers := c.byCell[k]
	kept := covers[:0]
	for _, cv := range covers {
		if cv.max > txid {
			kept = append(kept, cv)
			continue
		}
		cv.rec.left--
		if cv.rec.left == 0 {
			delete(c.live, cv.rec)
			c.doomLocked(cv.rec.key)
		}
	}
	if len(kept) == 0 {
		delete(c.byCell, k)
	} else {
		c.byCell[k] = kept
	}
}

// doomLocked queues a covered bundle for deletion: its batch starts at
// once when it makes deleteBatch, else when the oldest doomed bundle has
// waited deleteWait. Caller holds c.mu.
func (c *coverage) doomLocked(key string) {
	if len(c.doomed) == 0 && !c.stopped {
		c.doomedAt = c.l.clk.Now()
		c.timer = c.l.clk.AfterFunc(deleteWait, c.aged)
	}
	c.doomed = append(c.doomed, key)
	if len(c.doomed) >= deleteBatch {
		c.startLocked()
	}
}

// aged starts the doomed bundles' batch once the oldest has waited
// deleteWait (a timer stopped too late finds a younger batch, or none).
func (c *coverage) aged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.doomed) > 0 && c.l.clk.Now().Sub(c.doomedAt) >= deleteWait {
		c.startLocked()
	}
}

// startLocked hands every doomed bundle to the deleter as one batch (none
// once the deleter stopped). Caller holds c.mu.
func (c *coverage) startLocked() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if len(c.doomed) == 0 || c.stopped {
		return
	}
	c.batches = append(c.batches, c.doomed)
	c.doomed = nil
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// deleter deletes the batches started, until the log closes.
func (c *coverage) deleter() {
	defer close(c.done)
	for {
		c.mu.Lock()
		batches, stopped := c.batches, c.stopped
		c.batches = nil
		c.mu.Unlock()
		for _, keys := range batches {
			c.deleteAll(keys)
		}
		if len(batches) == 0 {
			if stopped {
				return
			}
			<-c.wake
		}
	}
}

// deleteAll deletes one batch, deleteConcurrency Deletes at a time. A
// bundle that could not be deleted stays (a final Close deletes the
// session's bundles; a recoverer or a sweeper those of a session it seals
// or finds replaced).
func (c *coverage) deleteAll(keys []string) {
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for _, key := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), c.l.opts.UploadTimeout)
			defer cancel()
			if err := c.l.opts.Store.Delete(ctx, key); err != nil {
				c.l.log.Warn("could not delete a covered bundle", "key", key, "err", err)
				return
			}
			c.l.metrics.BundleDeleted()
		}()
	}
	wg.Wait()
}

// close starts a last batch of everything doomed, waits for the deleter to
// delete it and every batch before it, and stops the deleter. Bundles
// covered later are left to a final Close's deletion of the session.
func (c *coverage) close() {
	c.mu.Lock()
	c.startLocked()
	c.stopped = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.done
}

// UntieredAge is how long ago the oldest credited bundle still in the
// bucket was credited (0 when none is): its rows are the oldest this node
// acknowledged that are not yet in their cells' prefixes.
func (l *Log) UntieredAge() time.Duration {
	if t := l.oldestUntiered(); !t.IsZero() {
		return l.clk.Now().Sub(t)
	}
	return 0
}

func (l *Log) oldestUntiered() time.Time {
	c := l.gc
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldest time.Time
	for rec := range c.live {
		if oldest.IsZero() || rec.credited.Before(oldest) {
			oldest = rec.credited
		}
	}
	return oldest
}
