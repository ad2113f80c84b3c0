package ltxlog

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/internal/imagespool"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// spool is the database as the epoch's first commit left it (read when
// that commit is appended), kept until the epoch's snapshot has been
// uploaded: the snapshot is that image with the first commit's pages laid
// over it, and the database itself has moved on by the time the upload
// runs (core/internal/imagespool: in memory up to 1 MiB, beyond in an
// unlinked temporary file).
type spool = imagespool.Spool

// spoolImage copies conn's image into a new spool (imagespool.FromConn).
func spoolImage(ctx context.Context, dir string, conn driver.Conn) (*spool, error) {
	return imagespool.FromConn(ctx, dir, conn)
}

// uploadSnapshot writes the epoch's first file, TXID 1 alone: every page
// of the database after the first commit, encoded page by page while it
// uploads (store.PutFrom through a pipe) from the spooled image and the
// commit's pages, so no image-sized buffer is held. A retry encodes it
// again: the same header and pages give the same bytes. createOnly writes
// it only where no object exists; a key already taken is this log's own
// object (an earlier attempt whose answer was lost) when it has the same
// size and ends with the same trailer, whose file checksum (CRC-64) covers
// every byte before it; otherwise another writer started the epoch
// (*durability.EpochInUseError).
func (c *cellLog) uploadSnapshot(p *pending, createOnly bool) error {
	defer func() {
		p.pages = nil
		if p.captured != nil {
			p.captured.Release()
			p.captured = nil
		}
	}()
	now := c.opts.Clock.Now().UnixMilli()
	h := ltx.Header{PageSize: uint32(p.pageSize), Commit: p.count, MinTXID: 1, MaxTXID: 1, Timestamp: now}
	key := ltx.Key(c.cell, c.epoch, 0, 1, 1)
	var written ltx.Written
	body := func() io.ReadCloser {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			w, err := ltx.EncodeTo(pw, h, c.snapshotPages(p))
			if err == nil {
				written = w
			}
			pw.CloseWithError(err)
		}()
		return &pipeBody{PipeReader: pr, done: done}
	}
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(now)}
	popts := store.PutOptions{Metadata: md}
	if createOnly {
		popts.Condition = store.IfAbsent
	}
	err := store.PutFromRetrying(c.opts.Store, key, body, popts, c.retry())
	if createOnly && store.IsPreconditionFailed(err) {
		// A store that checks the condition before reading the body left
		// the encoding unfinished: encode once more, to nowhere, for the
		// size and trailer to compare.
		if written.Size == 0 {
			rc := body()
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err == nil || store.IsPreconditionFailed(err) {
			tail := make([]byte, ltx.TrailerSize)
			binary.BigEndian.PutUint64(tail, written.PostApplyChecksum)
			binary.BigEndian.PutUint64(tail[8:], written.FileChecksum)
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.UploadTimeout)
			err = durability.Collision(ctx, c.opts.Store, durability.FirstObject{Cell: c.cell, Epoch: c.epoch, Key: key, Size: written.Size, Tail: tail}, c.log)
			cancel()
		}
	}
	if err != nil {
		return &UploadError{Key: key, Err: err}
	}
	c.mu.Lock()
	c.l0Files = append(c.l0Files, ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 0, MinTXID: 1, MaxTXID: 1, Size: written.Size})
	c.noteL0Locked(h)
	c.uploaded = 1
	c.markDurableLocked(1)
	c.mu.Unlock()
	return nil
}

// snapshotPages yields pages 1..p.count but the lock page: the first
// commit's page where it has one, else the spooled image's.
func (c *cellLog) snapshotPages(p *pending) func() (driver.Page, bool, error) {
	ps := int64(p.pageSize)
	lock := ltx.LockPgno(uint32(p.pageSize))
	buf := make([]byte, ps)
	pgno := uint32(0)
	return func() (driver.Page, bool, error) {
		pgno++
		if pgno == lock {
			pgno++
		}
		if pgno > p.count {
			return driver.Page{}, false, nil
		}
		if data, ok := p.pages[pgno]; ok {
			return driver.Page{Pgno: pgno, Data: data}, true, nil
		}
		off := int64(pgno-1) * ps
		if c.base == nil || off+ps > c.base.Size() {
			return driver.Page{}, false, fmt.Errorf("ltxlog: the snapshot has no page %d: neither the database as opened nor the first commit holds it", pgno)
		}
		if _, err := c.base.ReadAt(buf, off); err != nil {
			return driver.Page{}, false, fmt.Errorf("ltxlog: read page %d of the spooled database: %w", pgno, err)
		}
		return driver.Page{Pgno: pgno, Data: buf}, true, nil
	}
}

// pipeBody is the read end of a snapshot's pipe; Close stops the encoder
// (its next write fails) and waits for it, so no attempt outlives its put.
type pipeBody struct {
	*io.PipeReader
	done chan struct{}
}

func (b *pipeBody) Close() error {
	b.PipeReader.CloseWithError(errBodyClosed)
	<-b.done
	return nil
}

var errBodyClosed = fmt.Errorf("ltxlog: the snapshot's upload ended")
