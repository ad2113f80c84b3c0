package ltxlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// Bookmarks name the states a restore of the LTX log reaches: the end of
// a file of an epoch's chain (durability.Bookmark: epoch, TXID). A
// commit inside a group has no bookmark of its own. Without a retention
// window a later compaction may merge a file's end away (the bookmark is
// then restorable only as far as a file still ends there, as
// RestoreOptions.TXID is); with one (retain.go) every file end stays for
// the window. With a node log a bookmark handed out is made a file end of
// the cell's prefix first (PinDurableBookmark, PinBookmark).

var (
	_ durability.Bookmarks         = (*Log)(nil)
	_ durability.DurableBookmarker = (*cellLog)(nil)
	_ durability.BookmarkPinner    = (*cellLog)(nil)
)

// NewestBookmark is the bookmark of the end of the cell's newest chain
// (the state Restore rebuilds), with the rows of its owner's node log not
// yet tiered; the zero bookmark when the bucket holds nothing for it. It
// lists the bucket and reads no file.
func (l *Log) NewestBookmark(ctx context.Context, cell string) (durability.Bookmark, error) {
	return NewestBookmark(ctx, l.opts.Store, cell)
}

// NewestBookmark is Log.NewestBookmark on a bucket.
func NewestBookmark(ctx context.Context, s store.Store, cell string) (durability.Bookmark, error) {
	overlay, err := nodelog.Overlay(ctx, s, cell)
	if err != nil {
		return durability.Bookmark{}, fmt.Errorf("read the node log of %s's owner: %w", cell, err)
	}
	chain, err := findChain(ctx, s, cell, 0, overlay)
	if errors.Is(err, ErrNothingToRestore) {
		return durability.Bookmark{}, nil
	}
	if err != nil {
		return durability.Bookmark{}, err
	}
	plan, err := ltx.Plan(chain)
	if err != nil {
		return durability.Bookmark{}, err
	}
	last := plan[len(plan)-1]
	return durability.Bookmark{Epoch: last.Epoch, TXID: uint64(last.MaxTXID)}, nil
}

// BookmarkForTime is the bookmark of the newest state whose file
// timestamp (its last commit's time, as a restore by time reads it) is at
// or before t. It walks the epochs from the newest: in each it plans the
// chain a restore would read and reads the headers of a few of its files
// (a binary search: their timestamps rise along the chain); an epoch whose
// chain starts after t sends it to the one before. A t before every chain
// kept is a *durability.BookmarkTooOldError.
func (l *Log) BookmarkForTime(ctx context.Context, cell string, t time.Time) (durability.Bookmark, error) {
	return BookmarkForTime(ctx, l.opts.Store, cell, t)
}

// BookmarkForTime is Log.BookmarkForTime on a bucket.
func BookmarkForTime(ctx context.Context, s store.Store, cell string, t time.Time) (durability.Bookmark, error) {
	for attempt := 1; ; attempt++ {
		b, err := bookmarkForTimeOnce(ctx, s, cell, t)
		// A file compacted away between the listing and its read: list
		// again, as a restore does.
		if err != nil && store.IsNotFound(err) && attempt < 5 {
			continue
		}
		return b, err
	}
}

func bookmarkForTimeOnce(ctx context.Context, s store.Store, cell string, t time.Time) (durability.Bookmark, error) {
	overlay, err := nodelog.Overlay(ctx, s, cell)
	if err != nil {
		return durability.Bookmark{}, fmt.Errorf("read the node log of %s's owner: %w", cell, err)
	}
	return bookmarkForTimeIn(ctx, s, cell, t, overlay)
}

// bookmarkForTimeIn is BookmarkForTime with the node log's overlay given.
func bookmarkForTimeIn(ctx context.Context, s store.Store, cell string, t time.Time, overlay []ltx.FileInfo) (durability.Bookmark, error) {
	epochs, err := listEpochs(ctx, s, cell)
	if err != nil {
		return durability.Bookmark{}, err
	}
	limit := t.UnixMilli()
	var oldest int64
	var files []ltx.FileInfo // the files of the epochs listed so far
	// pending are epochs whose chain continues an older one not listed
	// yet (celld's continuation epochs), newest first: each is searched
	// once the walk has listed enough to plan it.
	var pending []uint64
	for _, e := range epochs {
		fs, err := listEpochFiles(ctx, s, cell, e)
		if err != nil {
			return durability.Bookmark{}, err
		}
		for _, f := range overlay {
			if f.Epoch == e {
				fs = append(fs, f)
			}
		}
		files = append(files, fs...)
		var still []uint64
		for _, ce := range append(pending, e) {
			chain, err := ltx.PlanEpochs(epochFilesFrom(files, ce))
			var me *ltx.MissingSnapshotError
			switch {
			case errors.As(err, &me):
				return durability.Bookmark{}, err
			case err != nil:
				still = append(still, ce)
				continue
			}
			b, first, found, err := searchChain(ctx, s, chain, limit)
			if err != nil || found {
				return b, err
			}
			if first != 0 {
				oldest = first
			}
		}
		pending = still
	}
	tooOld := &durability.BookmarkTooOldError{Cell: cell, Time: t}
	if oldest != 0 {
		tooOld.Oldest = time.UnixMilli(oldest)
	}
	return durability.Bookmark{}, tooOld
}

// searchChain finds the newest state of chain (the files of one chain's
// epochs) whose timestamp is at or before limit (Unix ms): found is false
// when the oldest is already after it (first is then its timestamp). The
// states are the ends of the files listed — with a retention window the
// log keeps the files of older states than the newest chain's, and every
// end a file listed holds restores exactly (retain.go) — searched by
// their headers' timestamps, which rise with the TXID. An end that does
// not restore (a file left over from an interrupted deletion) sends the
// search to the newest chain's own files.
func searchChain(ctx context.Context, s store.Store, chain []ltx.FileInfo, limit int64) (b durability.Bookmark, first int64, found bool, err error) {
	if _, err := ltx.Plan(chain); err != nil {
		return b, 0, false, err
	}
	byEnd := map[ltx.TXID]ltx.FileInfo{}
	for _, f := range chain {
		if g, ok := byEnd[f.MaxTXID]; !ok || f.Size < g.Size {
			byEnd[f.MaxTXID] = f
		}
	}
	ends := make([]ltx.FileInfo, 0, len(byEnd))
	for _, f := range byEnd {
		ends = append(ends, f)
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].MaxTXID < ends[j].MaxTXID })
	b, first, found, err = searchFiles(ctx, s, ends, limit)
	if err != nil || !found {
		return b, first, found, err
	}
	if plan, perr := ltx.PlanTo(chain, ltx.TXID(b.TXID)); perr == nil {
		last := plan[len(plan)-1]
		return durability.Bookmark{Epoch: last.Epoch, TXID: uint64(last.MaxTXID)}, 0, true, nil
	}
	plan, err := ltx.Plan(chain)
	if err != nil {
		return b, 0, false, err
	}
	return searchFiles(ctx, s, plan, limit)
}

// searchFiles finds, in files (in TXID order), the last one whose
// timestamp is at or before limit (Unix ms), by a binary search on their
// headers.
func searchFiles(ctx context.Context, s store.Store, plan []ltx.FileInfo, limit int64) (b durability.Bookmark, first int64, found bool, err error) {
	stamps := make([]int64, len(plan))
	read := func(i int) (int64, error) {
		if stamps[i] == 0 {
			h, err := readFileHeader(ctx, s, plan[i])
			if err != nil {
				return 0, err
			}
			stamps[i] = h.Timestamp
		}
		return stamps[i], nil
	}
	var rerr error
	// The first file whose timestamp is after limit.
	n := sort.Search(len(plan), func(i int) bool {
		ts, err := read(i)
		if err != nil && rerr == nil {
			rerr = err
		}
		return err != nil || ts > limit
	})
	if rerr != nil {
		return b, 0, false, rerr
	}
	if n == 0 {
		first, err := read(0)
		return b, first, false, err
	}
	f := plan[n-1]
	return durability.Bookmark{Epoch: f.Epoch, TXID: uint64(f.MaxTXID)}, 0, true, nil
}

// epochFilesFrom keeps the files of epoch e and older.
func epochFilesFrom(files []ltx.FileInfo, e uint64) []ltx.FileInfo {
	var out []ltx.FileInfo
	for _, f := range files {
		if f.Epoch <= e {
			out = append(out, f)
		}
	}
	return out
}

// readFileHeader reads f's header alone (one ranged read).
func readFileHeader(ctx context.Context, s store.Store, f ltx.FileInfo) (ltx.Header, error) {
	off := int64(0)
	if f.InBundle {
		off = f.Offset
	}
	r, err := store.NewRangeReader(ctx, s, f.Key, off, ltx.HeaderSize)
	if errors.Is(err, store.ErrInvalidRange) {
		err = fmt.Errorf("%w: %s changed since it was listed", store.ErrNotFound, f.Key)
	}
	if err != nil {
		return ltx.Header{}, fmt.Errorf("read %s: %w", f.Key, err)
	}
	defer r.Close()
	hb := make([]byte, ltx.HeaderSize)
	if _, err := io.ReadFull(r, hb); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ltx.Header{}, &ltx.CorruptError{Key: f.Key, Reason: "shorter than a header"}
		}
		return ltx.Header{}, fmt.Errorf("read %s: %w", f.Key, err)
	}
	h, err := ltx.DecodeHeader(hb)
	if err != nil {
		return ltx.Header{}, withKey(err, f.Key)
	}
	return h, nil
}

// DurableBookmark is the bookmark of the newest commit of this epoch that
// is durable, or, before the epoch's first, of the state Open restored;
// ok is false when the log has neither (a local database continued
// without a restore: the bucket's newest state is then the cell's).
func (c *cellLog) DurableBookmark() (durability.Bookmark, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.durable > 0 {
		return durability.Bookmark{Epoch: c.epoch, TXID: uint64(c.durable)}, true
	}
	if c.restored != nil {
		return *c.restored, true
	}
	return durability.Bookmark{}, false
}

// PinDurableBookmark is DurableBookmark made exact
// (durability.BookmarkPinner). Without a node log every durable state is
// already the end of an upload. With one, the newest durable state is
// usually a row still in a bundle, waiting to be merged with its
// neighbours by tiering: the rows up to it are tiered now, as one level-0
// file ending exactly there (one PUT per bookmark named, however many
// rows it holds), and only then is the bookmark named, so it outlives a
// crash of the node (a recovery folds only rows not yet tiered). The
// retention ladder keeps that file's end for the window (retain.go).
func (c *cellLog) PinDurableBookmark(ctx context.Context) (durability.Bookmark, bool, error) {
	if c.nl == nil {
		b, ok := c.DurableBookmark()
		return b, ok, nil
	}
	c.tierMu.Lock()
	defer c.tierMu.Unlock()
	// Rows are credited in order: the newest durable TXID is the last
	// row waiting, if any is.
	b, ok := c.DurableBookmark()
	if !ok {
		return b, ok, nil
	}
	if err := c.pinLocked(ctx, b); err != nil {
		return durability.Bookmark{}, false, err
	}
	return b, true, nil
}

// PinBookmark names the state find names (durability.BookmarkPinner):
// with a node log, BookmarkForTime reads the owner's bundles too, so it
// may name a row of this log not tiered yet. find runs with tiering held
// (no tiering merges that row away meanwhile), then the rows up to it are
// tiered as one file ending there.
func (c *cellLog) PinBookmark(ctx context.Context, find func(context.Context) (durability.Bookmark, error)) (durability.Bookmark, error) {
	if c.nl == nil {
		return find(ctx)
	}
	c.tierMu.Lock()
	defer c.tierMu.Unlock()
	b, err := find(ctx)
	if err != nil {
		return b, err
	}
	if err := c.pinLocked(ctx, b); err != nil {
		return durability.Bookmark{}, err
	}
	return b, nil
}

// pinLocked tiers the rows waiting up to b, if b is one of them, so that
// a file ends at b (one file, or one more at each pin of a restore request
// among them). Caller holds tierMu.
func (c *cellLog) pinLocked(ctx context.Context, b durability.Bookmark) error {
	if b.Epoch != c.epoch {
		return nil
	}
	c.mu.Lock()
	n := 0
	for n < len(c.untiered) && c.untiered[n].TXID <= ltx.TXID(b.TXID) {
		n++
	}
	c.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := c.tierThroughLocked(ctx, ltx.TXID(b.TXID)); err != nil {
		return fmt.Errorf("ltxlog: %s: write the rows up to bookmark %s to the cell's prefix: %w", c.cell, b, err)
	}
	c.log.Debug("tiered the rows up to a bookmark", "bookmark", b.String(), "rows", n)
	return nil
}

// markDurable records txid as durable (the newest wins). Caller holds
// c.mu.
func (c *cellLog) markDurableLocked(txid ltx.TXID) {
	if txid > c.durable {
		c.durable = txid
	}
}
