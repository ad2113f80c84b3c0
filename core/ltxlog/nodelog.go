package ltxlog

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
)

// With Options.NodeLog the log acknowledges a commit once the node log has
// credited the bundle holding it, and its own prefix catches up by tiering:
//
//   - submit turns a batch of commits into one level-0 file of one TXID
//     (the rows celld's bundles carry: a group of commits is one
//     transaction of the log, as a per-cell upload merges it into one
//     file) and hands it to the node log;
//     once their bundle is stored the cell's next batch may go, and the
//     batch is durable when the node log credits it (the pipeline's
//     Credit), so a busy cell's uploads overlap its credit reads;
//   - credited rows wait in memory (their encoded files: a few hundred
//     bytes for a small commit) until tier merges them, oldest first, into
//     one level-0 file <first>-<last> in the cell's prefix, then tells the
//     node log they are covered (it deletes a bundle once every row in it
//     is). tier runs once TierAfterRows rows or TierAfterBytes bytes wait,
//     or the node log's TierAge after the oldest was credited;
//   - Close waits for a submission in flight, then tiers every row
//     credited: the cell's record is released only after Close returns,
//     and a node that takes a released cell reads only the cell's prefix.
//     If that last tiering fails, the node fences itself: its record then
//     expires with its log open, and the node that takes the cell first
//     folds the log's bundles into the prefix (core/nodelog's Fold).
//
// The runtime skips its own re-read of the cell's ownership record before
// a reply (durability.ProvesOwnership): the node log's credit already read
// the node record after the bundle was stored.

// ProvesOwnership implements durability.OwnershipProver: with a node log,
// a commit is durable only once a read of the node's record, made after
// the bundle holding it was stored, showed the node's log still open.
func (c *cellLog) ProvesOwnership() bool { return c.nl != nil }

var _ durability.OwnershipProver = (*cellLog)(nil)

// submit hands a batch of commits to the node log and returns once the
// bundle holding them is stored (the pipeline's Upload): the cell's next
// group may then go into the next bundle while this one's credit read is
// made. credit (the pipeline's Credit) resolves the batch once the node
// log credited it, after recording its rows for tiering.
func (c *cellLog) submit(batch []*pending) error {
	// The group is one row: one LTX file of one TXID (celld's readers take
	// a row's TXID as its file's only one), its commits merged as a
	// per-cell upload merges them; encoding each commit alone would cost
	// an encoder (and its compressor's tables) per commit.
	txid := c.rowTXID
	data, _, err := c.encodeBatchAs(batch, txid, txid)
	if err != nil {
		return err
	}
	c.rowTXID++
	rows := []nodelog.Row{{Cell: c.cell, CellEpoch: c.epoch, TXID: txid, Data: data}}
	c.submitMu.Lock()
	defer c.submitMu.Unlock()
	if c.nlClosed.Load() {
		return ErrClosed
	}
	p := c.nl.SubmitAsync(rows)
	if err := p.StoreErr(); err != nil {
		return err
	}
	// The credit is awaited here, under crediting (which Close waits for),
	// whether or not the pipeline goes on to ask for it. Credits are
	// settled in the order the groups were stored: once one failed, no
	// later group's rows are recorded for tiering even if its own credit
	// came (its bundle was stored before the failure was known), so the
	// cell's prefix never gets a row after a missing one.
	f := durability.NewFuture()
	prev := c.creditTail
	mine := make(chan struct{})
	c.creditTail = mine
	c.crediting.Add(1)
	go func() {
		defer c.crediting.Done()
		err := p.Err()
		if prev != nil {
			<-prev
		}
		c.mu.Lock()
		if c.creditErr != nil {
			err = c.creditErr
		} else if err != nil {
			c.creditErr = err
		}
		c.mu.Unlock()
		if err == nil {
			c.credited(rows)
		}
		close(mine)
		f.Resolve(err)
	}()
	c.stored = f
	return nil
}

// credit is the pipeline's Credit for the batch submit just stored: the
// future its credit resolves, once the batch's rows are recorded for
// tiering (a reply it releases may be acknowledged at once, and the cell's
// Close tiers what was recorded).
func (c *cellLog) credit([]*pending) durability.Durable {
	f := c.stored
	c.stored = nil
	if f == nil {
		return durability.Resolved(nil) // a snapshot alone: confirmed in uploadBatch
	}
	return f
}

// credited records credited rows for tiering, and tiers at once when
// enough wait.
func (c *cellLog) credited(rows []nodelog.Row) {
	c.mu.Lock()
	wasEmpty := len(c.untiered) == 0
	c.untiered = append(c.untiered, rows...)
	for _, r := range rows {
		c.untBytes += len(r.Data)
		c.markDurableLocked(r.TXID)
	}
	full := len(c.untiered) >= c.opts.TierAfterRows || c.untBytes >= c.opts.TierAfterBytes
	if wasEmpty && !full {
		c.armTierLocked()
	}
	c.mu.Unlock()
	if full {
		go c.tierLogged()
	}
}

// armTierLocked starts the timer that tiers the rows waiting within the
// node log's TierAge. Caller holds c.mu.
func (c *cellLog) armTierLocked() {
	if c.tierTimer != nil || c.nlClosed.Load() {
		return
	}
	c.tierTimer = c.opts.Clock.AfterFunc(c.nl.Options().TierAge, func() {
		c.mu.Lock()
		c.tierTimer = nil
		c.mu.Unlock()
		c.tierLogged()
	})
}

// tierLogged tiers in the background, logging a failure: the rows stay
// in their bundles and the next tiering (or Close) tries again.
func (c *cellLog) tierLogged() {
	if err := c.tier(context.Background()); err != nil {
		c.log.Warn("tiering bundled rows into the cell's prefix failed; will retry", "err", err)
		c.mu.Lock()
		if len(c.untiered) > 0 {
			c.armTierLocked()
		}
		c.mu.Unlock()
	}
}

// tier writes every credited row waiting into the cell's prefix as
// level-0 files (a row alone as it is, several merged): one file, or one
// more at each TXID a restore request pinned (restorenext.go: a file must
// end there), then tells the node log they are covered. Nothing is
// written once the node fenced: the node that recovers its log folds the
// rows instead.
//
// Merging drops the states inside the run (a restore reaches the file's
// end only), which is what keeps tiering at a PUT per many rows. The
// states a bookmark names are file ends all the same: PinDurableBookmark
// and PinBookmark tier the rows up to the state they name before they
// name it, and the retention ladder (retain.go) keeps every level-0
// file's end, tiered or pinned, for the window.
func (c *cellLog) tier(ctx context.Context) error {
	c.tierMu.Lock()
	defer c.tierMu.Unlock()
	return c.tierThroughLocked(ctx, ^ltx.TXID(0))
}

// tierThroughLocked tiers the rows waiting up to and including txid, one
// file up to each pin among them (pinnedPrefixLocked), one for the rest.
// Caller holds tierMu.
func (c *cellLog) tierThroughLocked(ctx context.Context, txid ltx.TXID) error {
	for {
		c.mu.Lock()
		rows := c.untiered
		n := 0
		for n < len(rows) && rows[n].TXID <= txid {
			n++
		}
		rows = rows[:n]
		if p := c.pinnedPrefixLocked(rows); p < len(rows) {
			rows = rows[:p]
		}
		c.mu.Unlock()
		if len(rows) == 0 {
			return nil
		}
		if err := c.tierRowsLocked(ctx, rows); err != nil {
			return err
		}
	}
}

// tierRowsLocked tiers rows, the oldest untiered ones, as one level-0
// file. Caller holds tierMu.
func (c *cellLog) tierRowsLocked(ctx context.Context, rows []nodelog.Row) error {
	if len(rows) == 0 {
		return nil
	}
	select {
	case <-c.nl.Fenced():
		return nodelog.ErrFenced
	default:
	}
	data, h, err := mergeRows(rows)
	if err == nil {
		err = c.putLevel0(data, h)
	}
	c.nl.Metrics().Tier(len(rows), err)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.untiered = c.untiered[len(rows):]
	c.dropPinsLocked(h.MaxTXID)
	c.untBytes = 0
	for _, r := range c.untiered {
		c.untBytes += len(r.Data)
	}
	if len(c.untiered) > 0 {
		c.armTierLocked()
	}
	c.mu.Unlock()
	c.nl.Covered(c.cell, c.epoch, h.MaxTXID)
	c.maybeCompact()
	return nil
}

// mergeRows is the level-0 file holding rows, consecutive TXIDs.
func mergeRows(rows []nodelog.Row) ([]byte, ltx.Header, error) {
	if len(rows) == 1 {
		h, err := ltx.DecodeHeader(rows[0].Data)
		return rows[0].Data, h, err
	}
	files := make([][]byte, len(rows))
	for i, r := range rows {
		files[i] = r.Data
	}
	return ltx.MergeFiles(files)
}

// closeNodeLog ends the cell's use of the node log (see Close): no more
// submissions, every credited row tiered. A tiering that fails fences the
// node, so the cell's record is not released over a prefix that lacks
// acknowledged rows.
func (c *cellLog) closeNodeLog(ctx context.Context) {
	c.submitMu.Lock()
	c.nlClosed.Store(true)
	c.submitMu.Unlock()
	// Stored batches whose credit is still to come: a reply they release
	// may be acknowledged, so their rows are tiered below.
	c.crediting.Wait()
	c.mu.Lock()
	if c.tierTimer != nil {
		c.tierTimer.Stop()
		c.tierTimer = nil
	}
	c.mu.Unlock()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.tier(context.WithoutCancel(ctx)); err == nil {
			break
		}
	}
	select {
	case <-c.nl.Fenced():
		return
	default:
	}
	if err != nil {
		c.nl.Fence(fmt.Sprintf("the acknowledged commits of %s (epoch %d) could not be written to its own prefix before its release: %v", c.cell, c.epoch, err))
		return
	}
	c.nl.Done(c.cell, c.epoch)
}
