package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
)

// ErrClosed answers commits handed to a log that was already closed.
var ErrClosed = errors.New("backup: log closed")

// metaSHA256 names the metadata entry holding the image's SHA-256 (hex).
const metaSHA256 = "cellb-sha256"

type cellLog struct {
	opts    Options
	cell    string
	epoch   uint64
	capture bool
	log     *slog.Logger

	mu     sync.Mutex
	image  []byte // the newest commit-time image
	shared bool   // image is being saved: copy before laying pages on it
	seq    uint64 // the commit the image holds
	dirty  bool   // image is newer than the last successful save
	closed bool

	saveMu sync.Mutex // one save at a time (the ticker's or Close's)
	timer  clock.Timer
	stop   chan struct{}
	done   chan struct{}
}

func newCellLog(opts Options, cell string, epoch uint64, base []byte, capture bool) *cellLog {
	return &cellLog{
		opts: opts, cell: cell, epoch: epoch, capture: capture,
		log:   opts.Logger.With("cell", cell, "epoch", epoch),
		image: base,
		stop:  make(chan struct{}), done: make(chan struct{}),
		// Armed before run starts, so the first interval counts from Open.
		timer: opts.Clock.NewTimer(opts.Interval),
	}
}

// NeedsImage: without captured pages the log keeps the runtime's
// commit-time image, the only image it may ever save.
func (c *cellLog) NeedsImage() bool { return !c.capture }

// Rebind: the log keeps no connection after Open (durability.Rebinder),
// so the runtime may release and reopen the cell's connection freely.
func (c *cellLog) Rebind(ctx context.Context, conn driver.Conn) error { return nil }

// Append records the commit's state and acknowledges it at once: a backup
// promises nothing about commits after its last save (RPO > 0).
func (c *cellLog) Append(cm durability.Commit) durability.Durable {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return durability.Resolved(ErrClosed)
	}
	switch {
	case cm.Pages != nil:
		c.applyPagesLocked(cm.Pages.PageSize, int(cm.Pages.PageCount), cm.Pages.Pages)
		cm.Pages.Release() // copied into the image
	case cm.Image != nil:
		c.image = cm.Image
		c.shared = false
	default:
		// The log asked for images or pages; a commit with neither is a
		// runtime bug, and acknowledging it would hide lost data.
		return durability.Resolved(errors.New("backup: commit carries neither captured pages nor an image"))
	}
	c.seq = cm.Seq
	c.dirty = true
	return durability.Resolved(nil)
}

// applyPagesLocked lays a commit's pages over the image, copying it first
// if a save is reading it.
func (c *cellLog) applyPagesLocked(pageSize, pageCount int, pages []driver.Page) {
	size := pageSize * pageCount
	if c.shared || cap(c.image) < size {
		next := make([]byte, size)
		copy(next, c.image)
		c.image = next
		c.shared = false
	} else if len(c.image) < size {
		// Growing within capacity: the bytes past len may hold pages of a
		// larger image this database once had; zero them.
		old := len(c.image)
		c.image = c.image[:size]
		clear(c.image[old:])
	}
	c.image = c.image[:size]
	for _, p := range pages {
		off := int(p.Pgno-1) * pageSize
		if off+pageSize <= size {
			copy(c.image[off:off+pageSize], p.Data)
		}
	}
}

// Close stops the periodic saves. final (an orderly close) saves the cell
// once more if it changed since the last save and reports that save's
// failure; otherwise (a crash) nothing more is saved.
func (c *cellLog) Close(ctx context.Context, final bool) error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if !already {
		close(c.stop)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !final {
		return nil
	}
	return c.save(ctx)
}

// run saves the cell every Interval while it changed.
func (c *cellLog) run() {
	defer close(c.done)
	t := c.timer
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
		// Re-arm first: saves start one Interval apart, however long each
		// takes.
		t.Reset(c.opts.Interval)
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.SaveTimeout)
		err := c.save(ctx)
		cancel()
		if err != nil {
			c.log.Warn("backup failed; will retry at the next interval", "err", err)
		}
		if c.opts.afterTick != nil {
			c.opts.afterTick(err)
		}
	}
}

// save uploads the newest image if it changed since the last save, then
// prunes backups beyond Keep.
func (c *cellLog) save(ctx context.Context) error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	img, seq := c.image, c.seq
	c.shared = true
	c.dirty = false
	c.mu.Unlock()

	key := Key(c.cell, c.epoch, seq)
	sum := sha256.Sum256(img)
	popts := store.PutOptions{Metadata: map[string]string{metaSHA256: hex.EncodeToString(sum[:])}}
	if c.epoch > 0 {
		// Never over another writer's backup (epoch 0, lease.None's, has
		// no generations).
		popts.Condition = store.IfAbsent
	}
	_, err := c.opts.Store.Put(ctx, key, img, popts)
	if popts.Condition.IsConditional() && store.IsPreconditionFailed(err) {
		// This log's own earlier save (its answer was lost), or another
		// writer's backup of the same epoch.
		obj, gerr := c.opts.Store.Get(ctx, key)
		switch {
		case gerr != nil:
			err = fmt.Errorf("%s exists; reading it back to tell whose it is: %w", key, gerr)
		case bytes.Equal(obj.Data, img):
			err = nil
		default:
			err = &durability.EpochInUseError{Cell: c.cell, Epoch: c.epoch, Key: key, Newest: c.epoch}
		}
	}
	if err != nil {
		c.mu.Lock()
		if c.seq == seq {
			c.dirty = true
		} // else a newer commit already set dirty
		c.mu.Unlock()
		return fmt.Errorf("backup: save %s: %w", key, err)
	}
	c.log.Debug("backup saved", "key", key, "bytes", len(img))
	if err := c.prune(ctx); err != nil {
		c.log.Warn("deleting old backups failed; will retry after the next save", "err", err)
	}
	return nil
}

// prune deletes every backup of the cell older than the newest Keep.
func (c *cellLog) prune(ctx context.Context) error {
	infos, err := List(ctx, c.opts.Store, c.cell)
	if err != nil {
		return err
	}
	for i := c.opts.Keep; i < len(infos); i++ {
		if err := c.opts.Store.Delete(ctx, infos[i].Key); err != nil && !store.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", infos[i].Key, err)
		}
	}
	return nil
}
