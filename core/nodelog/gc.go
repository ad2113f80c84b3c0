package nodelog

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/cellb/cellb/core/ltx"
)

// coverage tracks the credited bundles still in the bucket and, per cell
// and epoch, the highest TXID each holds. A bundle is deleted once every
// cell in it has covered its rows in its own prefix (Covered), so the
// bucket holds each acknowledged row in a bundle, in a per-cell object, or
// both, at every moment.
type coverage struct {
	l *Log

	mu      sync.Mutex
	byCell  map[cellEpoch][]cover
	live    map[*bundleRec]struct{}
	doomed  []string
	wake    chan struct{}
	stopped bool
	done    chan struct{}
}

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
			c.doomed = append(c.doomed, cv.rec.key)
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
	if len(kept) == 0 {
		delete(c.byCell, k)
	} else {
		c.byCell[k] = kept
	}
}

// deleter deletes covered bundles in the background.
func (c *coverage) deleter() {
	defer close(c.done)
	for {
		c.mu.Lock()
		keys, stopped := c.doomed, c.stopped
		c.doomed = nil
		c.mu.Unlock()
		for _, key := range keys {
			ctx, cancel := context.WithTimeout(context.Background(), c.l.opts.UploadTimeout)
			if err := c.l.opts.Store.Delete(ctx, key); err != nil {
				c.l.log.Warn("could not delete a covered bundle; it is deleted when the log closes", "key", key, "err", err)
			}
			cancel()
			c.l.metrics.BundleDeleted()
		}
		if stopped && len(keys) == 0 {
			return
		}
		if len(keys) == 0 {
			<-c.wake
		}
	}
}

// close deletes what is doomed and stops the deleter.
func (c *coverage) close() {
	c.mu.Lock()
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
