package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/internal/imagespool"
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
	// conn is the cell's database, read (on the runtime's thread, inside
	// Append) for the image: with capture at the first commit, without
	// capture at every commit.
	conn driver.Conn

	mu sync.Mutex
	// img is the newest commit-time image, spooled (imagespool: in memory
	// up to 1 MiB, else in an unlinked temporary file); nil before the
	// first commit with capture.
	img *imagespool.Spool
	// saving is the image a save is reading. While img is that image,
	// captured commits wait in overlay and are laid on it after the save.
	saving  *imagespool.Spool
	overlay []*driver.CapturedCommit
	seq     uint64 // the commit img holds
	dirty   bool   // img is newer than the last successful save
	closed  bool

	saveMu sync.Mutex // one save at a time (the ticker's or Close's)
	timer  clock.Timer
	stop   chan struct{}
	done   chan struct{}
}

func newCellLog(opts Options, cell string, epoch uint64, conn driver.Conn, capture bool) *cellLog {
	return &cellLog{
		opts: opts, cell: cell, epoch: epoch, capture: capture, conn: conn,
		log:  opts.Logger.With("cell", cell, "epoch", epoch),
		stop: make(chan struct{}), done: make(chan struct{}),
		// Armed before run starts, so the first interval counts from Open.
		timer: opts.Clock.NewTimer(opts.Interval),
	}
}

// NeedsImage: without captured pages the log saves commit-time images; it
// reads them itself (ReadsOwnImage).
func (c *cellLog) NeedsImage() bool { return !c.capture }

// Rebind moves the log to the cell's new connection (durability.Rebinder):
// the log reads its images from the database (ReadsOwnImage, and the first
// image with capture) inside Append, so between Rebind(nil) and the next
// Rebind it holds none and reads nothing (no commit comes in between).
func (c *cellLog) Rebind(ctx context.Context, conn driver.Conn) error {
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	return nil
}

// ReadsOwnImage: the log copies the image from the database page by page
// at Append (durability.OwnImageReader), so the runtime hands over none.
func (c *cellLog) ReadsOwnImage() bool { return true }

// Append records the commit's state and acknowledges it at once: a backup
// promises nothing about commits after its last save (RPO > 0). The state
// is the commit's pages laid on the spooled image, or, without capture,
// the database copied into a new spool (an Image handed over is spooled
// the same way).
func (c *cellLog) Append(cm durability.Commit) durability.Durable {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		if cm.Pages != nil {
			cm.Pages.Release()
		}
		return durability.Resolved(ErrClosed)
	}
	var err error
	switch {
	case cm.Pages != nil && c.img == nil:
		// The first commit since open: the database as it left it.
		cm.Pages.Release()
		c.img, err = c.readImage()
	case cm.Pages != nil && c.img == c.saving:
		c.overlay = append(c.overlay, cm.Pages) // laid once the save is done
	case cm.Pages != nil:
		err = layPages(c.img, cm.Pages)
		cm.Pages.Release()
	case cm.Image != nil:
		var sp *imagespool.Spool
		if sp, err = imagespool.Of(c.opts.SpoolDir, cm.Image); err == nil {
			c.replaceLocked(sp)
		}
	case !c.capture:
		var sp *imagespool.Spool
		if sp, err = c.readImage(); err == nil {
			c.replaceLocked(sp)
		}
	default:
		// The log asked for images or pages; a commit with neither is a
		// runtime bug, and acknowledging it would hide lost data.
		return durability.Resolved(errors.New("backup: commit carries neither captured pages nor an image"))
	}
	if err != nil {
		return durability.Resolved(fmt.Errorf("backup: keep the image of commit %d: %w", cm.Seq, err))
	}
	c.seq = cm.Seq
	c.dirty = true
	return durability.Resolved(nil)
}

// readImage copies the database into a new spool.
func (c *cellLog) readImage() (*imagespool.Spool, error) {
	if c.conn == nil {
		return nil, errors.New("no database to read the image from")
	}
	return imagespool.FromConn(context.Background(), c.opts.SpoolDir, c.conn)
}

// replaceLocked makes sp the newest image; the one it replaces is closed
// now, or by the save reading it.
func (c *cellLog) replaceLocked(sp *imagespool.Spool) {
	if c.img != c.saving {
		c.img.Close()
	}
	c.img = sp
}

// layPages lays a commit's pages over img, cutting or growing it (with
// zeros) to the commit's page count.
func layPages(img *imagespool.Spool, cc *driver.CapturedCommit) error {
	ps := int64(cc.PageSize)
	size := ps * int64(cc.PageCount)
	if img.Size() != size {
		if err := img.Truncate(size); err != nil {
			return err
		}
	}
	for _, p := range cc.Pages {
		off := int64(p.Pgno-1) * ps
		if off+ps <= size {
			if _, err := img.WriteAt(p.Data[:ps], off); err != nil {
				return err
			}
		}
	}
	return nil
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
	var err error
	if final {
		err = c.save(ctx)
	}
	c.mu.Lock()
	c.img.Close()
	for _, cc := range c.overlay {
		cc.Release()
	}
	c.img, c.overlay = nil, nil
	c.mu.Unlock()
	return err
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
// prunes backups beyond Keep. The image streams from its spool: its
// SHA-256 is computed first (the metadata goes with the PUT), then it is
// read again as the body.
func (c *cellLog) save(ctx context.Context) error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	img, seq := c.img, c.seq
	c.saving = img
	c.dirty = false
	c.mu.Unlock()

	key := Key(c.cell, c.epoch, seq)
	err := c.upload(ctx, key, img)

	c.mu.Lock()
	c.saving = nil
	if img != c.img {
		img.Close() // replaced while it was saved
	} else {
		for i, cc := range c.overlay {
			if lerr := layPages(img, cc); lerr != nil && err == nil {
				// The spool is unusable: the next commit reads the
				// database afresh.
				err = fmt.Errorf("lay the commits made during the save: %w", lerr)
				img.Close()
				c.img = nil
			}
			cc.Release()
			c.overlay[i] = nil
		}
		c.overlay = c.overlay[:0]
	}
	if err != nil && c.seq == seq {
		c.dirty = true
	} // else a newer commit already set dirty
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("backup: save %s: %w", key, err)
	}
	c.log.Debug("backup saved", "key", key, "bytes", img.Size())
	if err := c.prune(ctx); err != nil {
		c.log.Warn("deleting old backups failed; will retry after the next save", "err", err)
	}
	return nil
}

// upload writes img to key, create-only under an epoch.
func (c *cellLog) upload(ctx context.Context, key string, img *imagespool.Spool) error {
	if img == nil {
		return errors.New("the image was lost (a failed write to its spool); the next commit reads it again")
	}
	sum, err := sha256Of(img.Reader())
	if err != nil {
		return fmt.Errorf("read the spooled image: %w", err)
	}
	popts := store.PutOptions{Metadata: map[string]string{metaSHA256: hex.EncodeToString(sum)}}
	if c.epoch > 0 {
		// Never over another writer's backup (epoch 0, lease.None's, has
		// no generations).
		popts.Condition = store.IfAbsent
	}
	_, err = store.PutFrom(ctx, c.opts.Store, key, img.Reader(), img.Size(), popts)
	if popts.Condition.IsConditional() && store.IsPreconditionFailed(err) {
		// This log's own earlier save (its answer was lost), or another
		// writer's backup of the same epoch: the same bytes (size and
		// SHA-256 of the stored body) are ours.
		same, gerr := sameBody(ctx, c.opts.Store, key, img.Size(), sum)
		switch {
		case gerr != nil:
			err = fmt.Errorf("%s exists; reading it back to tell whose it is: %w", key, gerr)
		case same:
			err = nil
		default:
			err = &durability.EpochInUseError{Cell: c.cell, Epoch: c.epoch, Key: key, Newest: c.epoch}
		}
	}
	return err
}

// sameBody reports whether key holds size bytes with SHA-256 sum.
func sameBody(ctx context.Context, s store.Store, key string, size int64, sum []byte) (bool, error) {
	r, err := store.NewReader(ctx, s, key)
	if err != nil {
		return false, err
	}
	defer r.Close()
	if r.Size != size {
		return false, nil
	}
	got, err := sha256Of(r)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, sum), nil
}

func sha256Of(r io.Reader) ([]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
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
