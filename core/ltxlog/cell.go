package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// ErrClosed fails commits still pending when a log is closed without a
// final flush (a crash, as EvictAll models it).
var ErrClosed = errors.New("ltxlog: log closed before the commit was uploaded")

// UploadError is the failure of a level-0 upload; every commit in it and
// after it fails with it.
type UploadError struct {
	Key string
	Err error
}

func (e *UploadError) Error() string { return fmt.Sprintf("upload %s: %v", e.Key, e.Err) }
func (e *UploadError) Unwrap() error { return e.Err }

// pending is one commit waiting for upload.
type pending struct {
	txid     ltx.TXID
	pageSize int
	count    uint32
	pages    map[uint32][]byte
	future   *durability.Future
	// captured, when the pages came from the driver, is released once
	// they are encoded, so the driver reuses their buffers.
	captured *driver.CapturedCommit
}

type cellLog struct {
	opts    Options
	cell    string
	epoch   uint64
	capture bool
	log     *slog.Logger

	mu       sync.Mutex
	cond     *sync.Cond
	queue    []*pending
	nextTXID ltx.TXID
	failed   error
	closing  bool // no more appends; run drains then exits
	abandon  bool // exit without draining
	done     chan struct{}

	// base is the database as opened, kept until the snapshot (TXID 1)
	// goes up; prevImage is the last image in image-diff mode.
	base      []byte
	prevImage []byte
	pageSize  int

	// Upload-side state, touched only by run.
	l0Files  []ltx.FileInfo // this epoch's level-0 files not yet compacted
	l1       *ltx.FileInfo  // this epoch's level-1 file, if any
	uploaded ltx.TXID
}

func newCellLog(opts Options, cell string, epoch uint64, base []byte, pageSize int, capture bool) *cellLog {
	c := &cellLog{
		opts: opts, cell: cell, epoch: epoch, capture: capture,
		log:      opts.Logger.With("cell", cell, "epoch", epoch),
		nextTXID: 1, done: make(chan struct{}),
		base: base, pageSize: pageSize,
	}
	if !capture {
		c.prevImage = base
	}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *cellLog) NeedsImage() bool { return !c.capture }

// Append queues one commit. It does no I/O: diffing an image is CPU only.
func (c *cellLog) Append(cm durability.Commit) durability.Durable {
	f := durability.NewFuture()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil {
		f.Resolve(c.failed)
		return f
	}
	if c.closing {
		f.Resolve(ErrClosed)
		return f
	}
	p := &pending{txid: c.nextTXID, pageSize: c.pageSize, future: f, pages: map[uint32][]byte{}}
	switch {
	case cm.Pages != nil:
		if cm.Pages.PageSize != 0 && cm.Pages.PageSize != c.pageSize {
			if c.nextTXID != 1 {
				c.failLocked(fmt.Errorf("ltxlog: page size changed from %d to %d mid-epoch", c.pageSize, cm.Pages.PageSize))
				f.Resolve(c.failed)
				return f
			}
			c.pageSize = cm.Pages.PageSize
			p.pageSize = c.pageSize
		}
		p.count = cm.Pages.PageCount
		p.captured = cm.Pages
		for _, pg := range cm.Pages.Pages {
			p.pages[pg.Pgno] = pg.Data
		}
	case cm.Image != nil:
		p.count = uint32(len(cm.Image) / c.pageSize)
		diffInto(p.pages, c.prevImage, cm.Image, c.pageSize)
		c.prevImage = cm.Image
	default:
		c.failLocked(errors.New("ltxlog: commit carries neither captured pages nor an image"))
		f.Resolve(c.failed)
		return f
	}
	c.nextTXID++
	c.queue = append(c.queue, p)
	c.cond.Signal()
	return f
}

// diffInto records in out every page of next that differs from prev.
func diffInto(out map[uint32][]byte, prev, next []byte, pageSize int) {
	for off := 0; off+pageSize <= len(next); off += pageSize {
		page := next[off : off+pageSize]
		if off+pageSize <= len(prev) && bytes.Equal(prev[off:off+pageSize], page) {
			continue
		}
		out[uint32(off/pageSize)+1] = page
	}
}

func (c *cellLog) failLocked(err error) {
	if c.failed == nil {
		c.failed = err
	}
	for _, p := range c.queue {
		p.future.Resolve(c.failed)
	}
	c.queue = nil
	c.cond.Broadcast()
}

// Close stops the log. final waits for every queued commit to be uploaded;
// otherwise queued commits fail with ErrClosed at once.
func (c *cellLog) Close(ctx context.Context, final bool) error {
	c.mu.Lock()
	c.closing = true
	if !final {
		c.abandon = true
		for _, p := range c.queue {
			p.future.Resolve(ErrClosed)
		}
		c.queue = nil
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		c.mu.Lock()
		c.abandon = true
		c.cond.Broadcast()
		c.mu.Unlock()
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if final && c.failed != nil {
		return c.failed
	}
	return nil
}

// run uploads batches in order until the log closes.
func (c *cellLog) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closing && c.failed == nil {
			c.cond.Wait()
		}
		if c.abandon || c.failed != nil || (c.closing && len(c.queue) == 0) {
			c.mu.Unlock()
			return
		}
		batch := c.queue
		c.queue = nil
		var base []byte
		if batch[0].txid == 1 {
			base = c.base
			c.base = nil
		}
		c.mu.Unlock()

		err := c.upload(batch, base)
		c.mu.Lock()
		if err != nil {
			c.log.Error("LTX upload failed; the cell's later commits will not be acknowledged", "err", err)
			for _, p := range batch {
				p.future.Resolve(err)
			}
			c.failLocked(err)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for _, p := range batch {
			p.future.Resolve(nil)
		}
		if c.opts.CompactAfter > 0 && len(c.l0Files) >= c.opts.CompactAfter {
			if err := c.compact(context.Background()); err != nil {
				// Compaction is an optimisation; the chain stays complete.
				c.log.Warn("LTX compaction failed; will retry after more commits", "err", err)
			}
		}
	}
}

// upload merges a batch (newest page wins) into one level-0 file and puts it.
func (c *cellLog) upload(batch []*pending, base []byte) error {
	first, last := batch[0], batch[len(batch)-1]
	pageSize := last.pageSize
	merged := map[uint32][]byte{}
	if first.txid == 1 {
		for off := 0; off+pageSize <= len(base); off += pageSize {
			merged[uint32(off/pageSize)+1] = base[off : off+pageSize]
		}
	}
	for _, p := range batch {
		for pgno, data := range p.pages {
			merged[pgno] = data
		}
		// A commit that shrank the database drops the pages past its end,
		// so a later commit that grows it again cannot resurrect them.
		for pgno := range merged {
			if pgno > p.count {
				delete(merged, pgno)
			}
		}
	}
	lock := ltx.LockPgno(uint32(pageSize))
	pages := make([]driver.Page, 0, len(merged))
	for pgno, data := range merged {
		if pgno == lock {
			continue
		}
		pages = append(pages, driver.Page{Pgno: pgno, Data: data})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].Pgno < pages[j].Pgno })
	now := c.opts.Clock.Now().UnixMilli()
	h := ltx.Header{
		PageSize: uint32(pageSize), Commit: last.count,
		MinTXID: first.txid, MaxTXID: last.txid, Timestamp: now,
	}
	data, err := ltx.Encode(h, pages)
	// The file holds its own copy of every page: the captured buffers are
	// not read again, whatever the upload's outcome.
	clear(pages)
	clear(merged)
	for _, p := range batch {
		p.pages = nil
		if p.captured != nil {
			p.captured.Release()
			p.captured = nil
		}
	}
	if err != nil {
		return fmt.Errorf("encode TXIDs %d-%d: %w", first.txid, last.txid, err)
	}
	key := ltx.Key(c.cell, c.epoch, 0, first.txid, last.txid)
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(now)}
	delay := c.opts.RetryDelay
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.UploadTimeout)
		_, err = c.opts.Store.Put(ctx, key, data, store.PutOptions{Metadata: md})
		cancel()
		if err == nil {
			break
		}
		if attempt >= c.opts.UploadRetries || c.isAbandoned() {
			return &UploadError{Key: key, Err: err}
		}
		c.log.Warn("LTX upload failed; retrying", "key", key, "attempt", attempt+1, "err", err)
		t := c.opts.Clock.NewTimer(delay)
		<-t.C()
		delay *= 2
	}
	c.l0Files = append(c.l0Files, ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 0, MinTXID: first.txid, MaxTXID: last.txid, Size: int64(len(data))})
	c.uploaded = last.txid
	return nil
}

func (c *cellLog) isAbandoned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.abandon
}
