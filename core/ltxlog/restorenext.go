package ltxlog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// A restore on the next session (durability.NextSessionRestorer) is a
// record, cells/<cell>/ltx/restore.json (layout.RestoreRequestKey), that
// names a bookmark:
//
//   - RequestRestore checks the bookmark against the bucket (its epoch's
//     chain must end a file exactly there), holds the epoch's compaction
//     (so the undo bookmark it returns stays a file end), and writes the
//     record;
//   - Open, restoring, sees the record in the listing of the cell's epochs
//     it makes anyway (the record sits beside the e<epoch>/ directories),
//     reads it and restores its bookmark instead of the newest state, under
//     the new epoch (which must be above every epoch the bucket holds:
//     restoreFor refuses otherwise);
//   - the uploader deletes the record right after the new epoch's snapshot
//     (TXID 1) is stored and before that commit counts as durable, so no
//     later commit is acknowledged while the record could still send the
//     next session back to the bookmark, and a crash before the delete
//     restores the same bookmark again.

var (
	_ durability.NextSessionRestorer  = (*cellLog)(nil)
	_ durability.RestoreRequestedOpen = (*cellLog)(nil)
)

// nextSession is a cellLog's part in restores on the next session.
type nextSession struct {
	// mu serializes the record's writes and its delete.
	mu sync.Mutex
	// from is the bookmark Open restored from a request (nil: none).
	from *durability.Bookmark
	// requested: a request was recorded in this epoch (the record is then
	// that request's, not the one Open restored).
	requested bool
	// settled is closed once the restored request's record is dealt
	// with; settleErr says how.
	settled   chan struct{}
	settleErr error
	dropped   bool
	// pins, with the node log, are TXIDs of this epoch a tiered file must
	// end at (the bookmark and undo of a request; a bookmark given out is
	// tiered at once instead: PinDurableBookmark), under the cell log's
	// mu.
	pins []ltx.TXID
}

// dropPinsLocked forgets the pins at or below txid (tiered). Caller holds
// c.mu.
func (c *cellLog) dropPinsLocked(txid ltx.TXID) {
	kept := c.next.pins[:0]
	for _, p := range c.next.pins {
		if p > txid {
			kept = append(kept, p)
		}
	}
	c.next.pins = kept
}

// pinnedPrefixLocked is how many of rows (consecutive TXIDs) go into one
// tiered file: up to and including the first pinned TXID among them but
// the last. Caller holds c.mu.
func (c *cellLog) pinnedPrefixLocked(rows []nodelog.Row) int {
	if len(rows) < 2 {
		return len(rows)
	}
	first, last := rows[0].TXID, rows[len(rows)-1].TXID
	n := len(rows)
	for _, p := range c.next.pins {
		if p >= first && p < last {
			n = min(n, int(p-first)+1)
		}
	}
	return n
}

// epochListing is the listing of a cell's LTX prefix: its epochs, newest
// first, and whether a restore request is recorded.
type epochListing struct {
	epochs    []uint64
	requested bool
}

// listCellLTX lists the cell's LTX prefix once (delimiter "/").
func listCellLTX(ctx context.Context, s store.Store, cell string) (epochListing, error) {
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: ltx.CellPrefix(cell), Delimiter: "/"})
	if err != nil {
		return epochListing{}, err
	}
	var out epochListing
	for _, p := range page.Prefixes {
		name := p[len(ltx.CellPrefix(cell)):]
		if e, ok := ltx.ParseEpochDir(name); ok {
			out.epochs = append(out.epochs, e)
		}
	}
	for _, o := range page.Objects {
		if layout.IsRestoreRequestKey(cell, o.Key) {
			out.requested = true
		}
	}
	sort.Slice(out.epochs, func(i, j int) bool { return out.epochs[i] > out.epochs[j] })
	return out, nil
}

// openRestoreOptions is what Open restores: from the listing it makes of
// the cell's epochs, the newest state, or a recorded request's bookmark
// (read then: the only extra request, made only when one is recorded).
func openRestoreOptions(ctx context.Context, s store.Store, cell string) (RestoreOptions, *durability.Bookmark, error) {
	l, err := listCellLTX(ctx, s, cell)
	if err != nil {
		return RestoreOptions{}, nil, err
	}
	opts := RestoreOptions{listed: l.epochs, haveListed: true}
	if !l.requested {
		return opts, nil, nil
	}
	key := layout.RestoreRequestKey(cell)
	obj, err := store.GetData(ctx, s, key)
	if store.IsNotFound(err) {
		// Dropped since the listing: the newest state is the one to serve.
		return opts, nil, nil
	}
	if err != nil {
		return RestoreOptions{}, nil, fmt.Errorf("read the restore request %s: %w", key, err)
	}
	rec, err := layout.DecodeRestoreRequest(key, obj.Data)
	if err != nil {
		return RestoreOptions{}, nil, err
	}
	b, err := durability.ParseBookmark(rec.Bookmark)
	if err != nil {
		return RestoreOptions{}, nil, fmt.Errorf("the restore request %s: %w", key, err)
	}
	opts.Epoch, opts.TXID = b.Epoch, ltx.TXID(b.TXID)
	return opts, &b, nil
}

// RequestRestore records that the cell's next session restores b
// (durability.NextSessionRestorer), once b is known to name a file end of
// a chain the bucket holds and not to be after the current state. The
// caller has made every commit it wants named durable (State.Sync). From
// here on this epoch is not compacted, so the current state, the undo
// bookmark, stays the end of a file: restorable later.
func (c *cellLog) RequestRestore(ctx context.Context, b durability.Bookmark, before func() error) (durability.Bookmark, error) {
	if c.epoch == 0 {
		return durability.Bookmark{}, &durability.RestoreNeedsEpochError{Cell: c.cell}
	}
	if err := c.holdHistory(ctx); err != nil {
		return durability.Bookmark{}, err
	}
	if c.nl != nil {
		// Tiering merges rows: none runs while the rows are looked at
		// and the bookmarks pinned.
		c.tierMu.Lock()
		defer c.tierMu.Unlock()
	}
	undo, known := c.DurableBookmark()
	if !known {
		var err error
		if undo, err = NewestBookmark(ctx, c.opts.Store, c.cell); err != nil {
			return durability.Bookmark{}, err
		}
	}
	if undo.Before(b) {
		return durability.Bookmark{}, &durability.BookmarkInFutureError{Cell: c.cell, Bookmark: b.String(), Current: undo.String()}
	}
	if c.nl == nil {
		if err := CheckBookmark(ctx, c.opts.Store, c.cell, b); err != nil {
			return durability.Bookmark{}, err
		}
	} else {
		// A bookmark of a row still waiting to be tiered is pinned (a
		// tiered file will end there); any other must end a file of the
		// cell's prefix already, where the next session reads.
		c.mu.Lock()
		pinB := c.untieredLocked(b)
		c.mu.Unlock()
		if !pinB {
			if err := checkBookmark(ctx, c.opts.Store, c.cell, b, false); err != nil {
				return durability.Bookmark{}, err
			}
		}
		c.mu.Lock()
		for _, x := range []durability.Bookmark{b, undo} {
			if c.untieredLocked(x) {
				c.next.pins = append(c.next.pins, ltx.TXID(x.TXID))
			}
		}
		c.mu.Unlock()
	}
	if before != nil {
		if err := before(); err != nil {
			return durability.Bookmark{}, err
		}
	}
	rec := layout.RestoreRequest{Bookmark: b.String(), Undo: undo.String(), Epoch: c.epoch}
	c.next.mu.Lock()
	defer c.next.mu.Unlock()
	c.next.requested = true
	if _, err := c.opts.Store.Put(ctx, layout.RestoreRequestKey(c.cell), rec.Encode(), store.PutOptions{}); err != nil {
		return durability.Bookmark{}, fmt.Errorf("record the restore request: %w", err)
	}
	c.log.Info("restore on the next session recorded", "bookmark", rec.Bookmark, "undo", rec.Undo)
	return undo, nil
}

// holdHistory stops the epoch's compaction for good and waits for a
// running one to end: a compaction merges level-0 files, and the state
// at a request (its undo bookmark) must stay the end of a file.
func (c *cellLog) holdHistory(ctx context.Context) error {
	c.mu.Lock()
	c.holdCompaction = true
	done := c.compactDone
	running := c.compacting
	c.mu.Unlock()
	if !running || done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// untieredLocked reports whether b names a row of this epoch still
// waiting to be tiered. Caller holds c.mu.
func (c *cellLog) untieredLocked(b durability.Bookmark) bool {
	if b.Epoch != c.epoch || len(c.untiered) == 0 {
		return false
	}
	t := ltx.TXID(b.TXID)
	return t >= c.untiered[0].TXID && t <= c.untiered[len(c.untiered)-1].TXID
}

// CheckBookmark reports whether the bucket can restore b: nil when b's
// epoch has a chain one of whose files ends exactly at b's TXID (the rows
// of its owner's node log count), else a
// *durability.BookmarkNotRestorableError (or the bucket's error). It lists
// and reads no file.
func CheckBookmark(ctx context.Context, s store.Store, cell string, b durability.Bookmark) error {
	return checkBookmark(ctx, s, cell, b, true)
}

// checkBookmark is CheckBookmark, with the node log's rows or on the
// cell's prefix alone.
func checkBookmark(ctx context.Context, s store.Store, cell string, b durability.Bookmark, withOverlay bool) error {
	notRestorable := func(err error) error {
		return &durability.BookmarkNotRestorableError{Cell: cell, Bookmark: b.String(), Err: err}
	}
	if b.IsZero() {
		return notRestorable(durability.ErrEmptyBookmark)
	}
	if b.TXID == 0 {
		return notRestorable(errors.New("TXID 0 names no state of an epoch"))
	}
	var overlay []ltx.FileInfo
	if withOverlay {
		var err error
		if overlay, err = WithOverlay(s, cell, RestoreOptions{}).Overlay(ctx); err != nil {
			return fmt.Errorf("read the node log of %s's owner: %w", cell, err)
		}
	}
	chain, err := findChainUpTo(ctx, s, cell, 0, b.Epoch, overlay)
	if err == nil {
		var plan []ltx.FileInfo
		plan, err = ltx.PlanTo(chain, ltx.TXID(b.TXID))
		if err == nil && plan[len(plan)-1].Epoch != b.Epoch {
			err = &EpochNotRestorableError{Cell: cell, Epoch: b.Epoch}
		}
	}
	var (
		enr *EpochNotRestorableError
		tnr *ltx.TXIDNotRestorableError
		gap *ltx.GapError
		ms  *ltx.MissingSnapshotError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &enr), errors.As(err, &tnr), errors.As(err, &gap), errors.As(err, &ms),
		errors.Is(err, ErrNothingToRestore), errors.Is(err, ltx.ErrTxNotAvailable):
		return notRestorable(err)
	}
	return err
}

// RestoredFromRequest reports the bookmark Open restored from a recorded
// request (durability.RestoreRequestedOpen).
func (c *cellLog) RestoredFromRequest() (durability.Bookmark, bool) {
	if c.next.from == nil {
		return durability.Bookmark{}, false
	}
	return *c.next.from, true
}

// RestoreSettled waits until the restored request's record is deleted
// (nil), or known not to be by this log.
func (c *cellLog) RestoreSettled(ctx context.Context) error {
	if c.next.from == nil {
		return errors.New("ltxlog: this session restored no request")
	}
	select {
	case <-c.next.settled:
		return c.next.settleErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dropRequest deletes the restored request's record, once the epoch's
// snapshot is stored (the uploader, before that commit resolves): a
// failure fails the commit, as a failed upload does. A request recorded
// in this epoch since replaced the record and is kept.
func (c *cellLog) dropRequest(ctx context.Context) error {
	ns := &c.next
	if ns.from == nil || ns.dropped {
		return nil
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.dropped = true
	if ns.requested {
		ns.settleErr = durability.ErrRestoreSuperseded
		close(ns.settled)
		return nil
	}
	key := layout.RestoreRequestKey(c.cell)
	var err error
	for attempt := 0; attempt <= max(c.opts.UploadRetries, 0); attempt++ {
		if err = c.opts.Store.Delete(ctx, key); err == nil || store.IsNotFound(err) {
			err = nil
			break
		}
	}
	if err != nil {
		ns.settleErr = fmt.Errorf("delete the restore request %s: %w", key, err)
		close(ns.settled)
		return ns.settleErr
	}
	c.log.Info("restore on the next session done: the new epoch's snapshot is stored", "bookmark", ns.from.String())
	close(ns.settled)
	return nil
}

// CancelRestore deletes the cell's pending restore request, if any: the
// next session then serves the newest state. It is for an operator whose
// cell cannot start because the bookmark a request names is no longer
// restorable (the session's Open refuses rather than fall back).
func (l *Log) CancelRestore(ctx context.Context, cell string) error {
	err := l.opts.Store.Delete(ctx, layout.RestoreRequestKey(cell))
	if store.IsNotFound(err) {
		return nil
	}
	return err
}
