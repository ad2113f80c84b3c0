package ltxlog

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
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

	pipe *durability.Pipeline[*pending]

	// Append-side state, touched only by Append (under the pipeline's
	// lock, on the runtime's thread).
	nextTXID ltx.TXID

	// base is the database as the first commit left it, spooled (with
	// page capture: in memory up to 1 MiB, else in an unlinked temporary
	// file) until the snapshot (TXID 1) goes up; nil without page capture. prevSums, in image-diff mode, are 128-bit keyed hashes of
	// the last image's pages (16 bytes a page, not the image), which the
	// next image's pages are compared against.
	base *spool
	// baseConn, with page capture, is the database base is read from at
	// the epoch's first commit (then nil); baseErr fails that commit and
	// every later one when the read failed.
	baseConn driver.Conn
	baseErr  error
	// rebase: baseConn was released (Rebind(nil)); the next Rebind's
	// connection takes its place.
	rebase   bool
	prevSums []pageSum
	seeds    [2]maphash.Seed
	pageSize int

	// Chain state, shared by the uploader (which appends level-0 files)
	// and the compactor (which replaces a prefix of them with a level-1
	// file), under mu.
	mu      sync.Mutex
	l0Files []ltx.FileInfo // this epoch's level-0 files not yet compacted
	chain   l1Chain        // what compaction made of the chain (compact.go)
	// ret, with a retention window, is the ladder's bookkeeping
	// (retain.go); nil without one.
	ret      *retention
	uploaded ltx.TXID
	// durable is the newest TXID of the epoch that is durable (stored, or
	// with a node log credited); restored, the state Open restored
	// (bookmark.go).
	durable  ltx.TXID
	restored *durability.Bookmark
	// compactDone is closed when the running compactor exits (nil: none
	// has run); stopped, set by Close, starts no other. stopCompact
	// cancels a running one.
	compacting  bool
	compactDone chan struct{}
	stopped     bool
	compactCtx  context.Context
	stopCompact context.CancelFunc
	// holdCompaction, once a restore on the next session is requested,
	// starts no other compaction (restorenext.go).
	holdCompaction bool
	// next is the log's part in restores on the next session
	// (restorenext.go).
	next nextSession

	// With a node log (nodelog.go): the rows credited and not yet tiered
	// into the cell's prefix, in TXID order, under mu.
	nl       *nodelog.Log
	untiered []nodelog.Row
	untBytes int
	// tierTimer tiers the oldest untiered row within the node log's
	// TierAge; tiering, serialized by tierMu, runs beside the uploads.
	tierTimer clock.Timer
	tierMu    sync.Mutex
	// submitMu is held across a submission and the credit's bookkeeping,
	// so Close waits for the one in flight; nlClosed refuses later ones.
	submitMu sync.Mutex
	nlClosed atomic.Bool
	// stored is the credit of the batch submit stored last, for credit
	// (both run on the uploader); crediting counts the credits still to
	// come.
	stored    *durability.Future
	crediting sync.WaitGroup
	// creditTail is closed once the last stored group's credit is settled
	// (uploader only); creditErr, under mu, is the first credit that
	// failed: every later group fails with it.
	creditTail chan struct{}
	creditErr  error
	// rowTXID is the TXID the next group submitted to the node log takes
	// (after the epoch's snapshot, TXID 1): a group of commits is one
	// transaction of the LTX log, one row of a bundle.
	rowTXID ltx.TXID
}

func newCellLog(opts Options, cell string, epoch uint64, base *spool, pageSize int, capture bool, syncLocal func() error) *cellLog {
	c := &cellLog{
		opts: opts, cell: cell, epoch: epoch, capture: capture, nl: opts.NodeLog, rowTXID: 2,
		log:      opts.Logger.With("cell", cell, "epoch", epoch),
		nextTXID: 1,
		base:     base, pageSize: pageSize,
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
	}
	if opts.Retention > 0 {
		c.ret = &retention{ts: map[ltx.TXID]int64{}}
	}
	c.compactCtx, c.stopCompact = context.WithCancel(context.Background())
	c.next.settled = make(chan struct{})
	popts := durability.PipelineOptions[*pending]{
		Upload: c.uploadBatch,
		Sync:   syncLocal,
		After:  c.maybeCompact,
		Closed: ErrClosed, Logger: c.log, Clock: opts.Clock,
		FailMessage: "LTX upload failed; the cell's later commits will not be acknowledged",
	}
	if c.nl != nil {
		popts.Credit = c.credit
	}
	c.pipe = durability.NewPipeline(popts)
	return c
}

func (c *cellLog) NeedsImage() bool { return !c.capture }

// Rebind swaps the connection the epoch's snapshot is read from, if it is
// still to be read (durability.Rebinder): the runtime released the cell's
// idle connection (nil) or opened a new one on the same file. Nothing else
// the log holds belongs to a connection.
func (c *cellLog) Rebind(ctx context.Context, conn driver.Conn) error {
	switch {
	case conn == nil && c.baseConn != nil:
		c.baseConn, c.rebase = nil, true
	case conn != nil && c.rebase:
		c.baseConn, c.rebase = conn, false
	}
	return nil
}

// Append queues one commit. It does no I/O (diffing an image is CPU only),
// except at the epoch's first commit with page capture, which reads the
// database for the snapshot: the runtime takes a connection's captured
// commits right after each commit it makes, so the database then is the
// one the first commit left, and laying its pages over it changes nothing.
func (c *cellLog) Append(cm durability.Commit) durability.Durable {
	if c.baseConn != nil && cm.Pages != nil {
		conn := c.baseConn
		c.baseConn = nil
		base, err := spoolImage(context.Background(), c.opts.SpoolDir, conn)
		if err != nil {
			c.baseErr = fmt.Errorf("ltxlog: read %s for the epoch's snapshot: %w", c.cell, err)
		}
		c.base = base
	}
	if c.baseErr != nil {
		return durability.Resolved(c.baseErr)
	}
	return c.pipe.Append(func() (*pending, error) {
		p := &pending{txid: c.nextTXID, pageSize: c.pageSize, pages: map[uint32][]byte{}}
		switch {
		case cm.Pages != nil:
			if cm.Pages.PageSize != 0 && cm.Pages.PageSize != c.pageSize {
				if c.nextTXID != 1 {
					return nil, fmt.Errorf("ltxlog: page size changed from %d to %d mid-epoch", c.pageSize, cm.Pages.PageSize)
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
			// The first commit's image is the snapshot: every page of it
			// goes up, so there is nothing to diff it against.
			c.prevSums = diffInto(p.pages, c.prevSums, cm.Image, c.pageSize, c.seeds)
		default:
			return nil, errors.New("ltxlog: commit carries neither captured pages nor an image")
		}
		c.nextTXID++
		return p, nil
	})
}

// pageSum identifies a page's content: two 64-bit hashes under the log's
// own random seeds, so a changed page passes for unchanged only by a
// 128-bit collision no input can be crafted for.
type pageSum [2]uint64

// diffInto records in out every page of next whose sum differs from prev's
// (or that prev did not have), and returns next's sums.
func diffInto(out map[uint32][]byte, prev []pageSum, next []byte, pageSize int, seeds [2]maphash.Seed) []pageSum {
	sums := make([]pageSum, 0, len(next)/pageSize)
	for off := 0; off+pageSize <= len(next); off += pageSize {
		page := next[off : off+pageSize]
		sum := pageSum{maphash.Bytes(seeds[0], page), maphash.Bytes(seeds[1], page)}
		i := len(sums)
		sums = append(sums, sum)
		if i < len(prev) && prev[i] == sum {
			continue
		}
		out[uint32(i)+1] = page
	}
	return sums
}

// Close stops the log. final waits for every queued commit to be uploaded
// and for a compaction in progress to end; otherwise queued commits fail
// with ErrClosed at once and a compaction in progress is cancelled. Either
// way the bucket holds a complete chain: a compaction deletes nothing
// before the level-1 file that covers it is stored.
func (c *cellLog) Close(ctx context.Context, final bool) error {
	err := c.pipe.Close(ctx, final)
	if c.nl != nil {
		c.closeNodeLog(ctx)
	}
	c.mu.Lock()
	c.stopped = true
	done := c.compactDone
	c.mu.Unlock()
	if !final || ctx.Err() != nil {
		c.stopCompact()
	}
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			// Every commit is up; the compaction is cancelled and leaves
			// a complete chain.
		}
	}
	c.stopCompact()
	if ctx.Err() == nil {
		// The uploader has stopped: the spool, if the snapshot never went
		// up, is no longer read. (An abandoned uploader may still read it;
		// the unlinked file then goes with its descriptor.)
		c.base.Close()
	}
	return err
}

// uploadBatch stores one batch (the pipeline's uploader).
//
// The epoch's first object is its snapshot at TXID 1 alone
// (e<epoch>/0000/0000000000000001-0000000000000001.ltx, the key celld's
// first file has too), written create-only: if another writer already
// started this epoch, the write fails instead of replacing that writer's
// snapshot. Epoch 0 (no ownership, lease.None) has no generations and is
// written plainly.
//
// With a node log the snapshot still goes to the cell's prefix (it may be
// the whole database, and its create-only write is what makes the epoch
// this writer's), and the later commits go to the node log (submit); a
// snapshot alone is then confirmed as a bundle is: by a read of the node
// record that started after it was stored.
func (c *cellLog) uploadBatch(batch []*pending) error {
	if batch[0].txid == 1 {
		err := c.uploadSnapshot(batch[0], c.epoch > 0)
		c.base.Close()
		if err != nil {
			return err
		}
		// A restore request this epoch restored is done once its
		// snapshot is stored (restorenext.go).
		if err := c.dropRequest(context.Background()); err != nil {
			return err
		}
		if batch = batch[1:]; len(batch) == 0 {
			if c.nl != nil {
				return c.nl.Confirm(context.Background())
			}
			return nil
		}
	}
	if c.nl != nil {
		return c.submit(batch)
	}
	return c.upload(batch)
}

func (c *cellLog) retry() store.Retry {
	return store.Retry{
		Retries: c.opts.UploadRetries, Delay: c.opts.RetryDelay, Timeout: c.opts.UploadTimeout,
		Clock: c.opts.Clock, Stop: c.pipe.Abandoned, Logger: c.log,
	}
}

// maybeCompact (the pipeline's After hook, on the uploader) starts a
// compactor once the epoch has enough level-0 files and none is running.
// The compactor runs on its own goroutine: the uploader goes on with the
// next batch at once, so no acknowledgement waits for a compaction.
func (c *cellLog) maybeCompact() {
	if c.opts.CompactAfter <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compacting || c.stopped || c.holdCompaction || len(c.l0Files) < c.compactAt() {
		return
	}
	c.compacting = true
	c.compactDone = make(chan struct{})
	go c.compactor(c.compactDone)
}

// compactor compacts until fewer than compactAt level-0 files are left
// (uploads go on meanwhile), a compaction fails, or it is cancelled (a
// close that is not final). A final close waits for it.
func (c *cellLog) compactor(done chan struct{}) {
	defer close(done)
	for {
		err := c.compact(c.compactCtx)
		if err != nil && c.compactCtx.Err() == nil {
			// Compaction is an optimisation; the chain stays complete.
			c.log.Warn("LTX compaction failed; will retry after more commits", "err", err)
		}
		c.mu.Lock()
		if err != nil || c.compactCtx.Err() != nil || len(c.l0Files) < c.compactAt() {
			c.compacting = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// encodeBatch merges a batch of commits (newest page wins) into one
// level-0 file spanning their TXIDs and releases their captured pages: the
// file holds its own copy of every page, so the driver's buffers are not
// read again, whatever happens to the file.
func (c *cellLog) encodeBatch(batch []*pending) ([]byte, ltx.Header, error) {
	return c.encodeBatchAs(batch, batch[0].txid, batch[len(batch)-1].txid)
}

// encodeBatchAs is encodeBatch with the file's TXIDs given.
func (c *cellLog) encodeBatchAs(batch []*pending, min, max ltx.TXID) ([]byte, ltx.Header, error) {
	last := batch[len(batch)-1]
	pageSize := last.pageSize
	merged := map[uint32][]byte{}
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
	h := ltx.Header{
		PageSize: uint32(pageSize), Commit: last.count,
		MinTXID: min, MaxTXID: max, Timestamp: c.opts.Clock.Now().UnixMilli(),
	}
	data, err := ltx.Encode(h, pages)
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
		return nil, h, fmt.Errorf("encode TXIDs %d-%d: %w", min, max, err)
	}
	return data, h, nil
}

// upload merges a batch of later commits (newest page wins) into one
// level-0 file and puts it.
func (c *cellLog) upload(batch []*pending) error {
	data, h, err := c.encodeBatch(batch)
	if err != nil {
		return err
	}
	return c.putLevel0(data, h)
}

// putLevel0 stores one level-0 file of the epoch in the cell's prefix and
// adds it to the chain.
func (c *cellLog) putLevel0(data []byte, h ltx.Header) error {
	key := ltx.Key(c.cell, c.epoch, 0, h.MinTXID, h.MaxTXID)
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(h.Timestamp)}
	popts := store.PutOptions{Metadata: md}
	if err := store.PutRetrying(c.opts.Store, key, data, popts, c.retry()); err != nil {
		return &UploadError{Key: key, Err: err}
	}
	c.mu.Lock()
	c.l0Files = append(c.l0Files, ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 0, MinTXID: h.MinTXID, MaxTXID: h.MaxTXID, Size: int64(len(data))})
	c.noteL0Locked(h)
	c.uploaded = h.MaxTXID
	c.markDurableLocked(h.MaxTXID)
	c.mu.Unlock()
	return nil
}
