package ltxlog

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// compact merges this epoch's chain (its level-1 file, if any, and the
// level-0 files after it) into one level-1 file from TXID 1, uploads it, and
// only then deletes the files it replaces: at every moment the bucket holds
// a complete chain. It runs on the compactor's goroutine while uploads go
// on: it merges the files listed when it starts (uploads only add files
// after them, never change or delete one), and a restore that lists a file
// this deletes before reading it starts again from a fresh listing.
func (c *cellLog) compact(ctx context.Context) error {
	c.mu.Lock()
	inputs := append([]ltx.FileInfo(nil), c.l0Files...)
	if c.l1 != nil {
		inputs = append([]ltx.FileInfo{*c.l1}, inputs...)
	}
	c.mu.Unlock()
	plan, err := ltx.Plan(inputs)
	if err != nil {
		return fmt.Errorf("plan compaction: %w", err)
	}
	// The merged image is built in an unlinked temporary file and encoded
	// from it while it uploads: nothing image-sized is held in memory.
	f, err := os.CreateTemp(c.opts.SpoolDir, "cellb-ltx-compact-*")
	if err != nil {
		return err
	}
	os.Remove(f.Name())
	defer f.Close()
	co := newCoalescer(f)
	defer co.close()
	im := ltx.NewImageTo(co)
	var last ltx.Header
	for _, fi := range plan {
		r, err := store.NewReader(ctx, c.opts.Store, fi.Key)
		if err != nil {
			return err
		}
		h, err := im.ApplyFrom(r)
		r.Close()
		if err != nil {
			return err
		}
		last = h
	}
	if err := im.Finish(); err != nil {
		return err
	}
	if err := co.close(); err != nil {
		return err
	}
	ps := int64(last.PageSize)
	lock := ltx.LockPgno(last.PageSize)
	h := ltx.Header{PageSize: last.PageSize, Commit: last.Commit, MinTXID: 1, MaxTXID: last.MaxTXID, Timestamp: last.Timestamp}
	buf := make([]byte, ps)
	var pgno uint32
	next := func() (driver.Page, bool, error) {
		pgno++
		if pgno == lock {
			pgno++
		}
		if pgno > last.Commit {
			return driver.Page{}, false, nil
		}
		if _, err := f.ReadAt(buf, int64(pgno-1)*ps); err != nil {
			return driver.Page{}, false, err
		}
		return driver.Page{Pgno: pgno, Data: buf}, true, nil
	}
	pr, pw := io.Pipe()
	var written ltx.Written
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := ltx.EncodeTo(pw, h, next)
		written = w
		pw.CloseWithError(err)
	}()
	key := ltx.Key(c.cell, c.epoch, 1, 1, last.MaxTXID)
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(last.Timestamp)}
	_, err = store.PutFrom(ctx, c.opts.Store, key, pr, -1, store.PutOptions{Metadata: md})
	pr.CloseWithError(errBodyClosed)
	<-done
	if err != nil {
		return err
	}
	newL1 := ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 1, MinTXID: 1, MaxTXID: last.MaxTXID, Size: written.Size}
	// The new file covers every input; from now on the chain starts with
	// it, and level-0 files uploaded meanwhile stay after it.
	c.mu.Lock()
	c.l1 = &newL1
	var kept []ltx.FileInfo
	for _, f := range c.l0Files {
		if f.MaxTXID > last.MaxTXID {
			kept = append(kept, f)
		}
	}
	c.l0Files = kept
	c.mu.Unlock()
	// Now the old files can go.
	for _, f := range inputs {
		if f.Key == key || f.MaxTXID > last.MaxTXID {
			continue
		}
		if err := c.opts.Store.Delete(ctx, f.Key); err != nil {
			if ctx.Err() != nil {
				break // closing: left-over files are harmless
			}
			// Left-over files are harmless: the planner prefers the
			// level-1 file that covers them.
			c.log.Warn("could not delete a compacted LTX file", "key", f.Key, "err", err)
		}
	}
	c.log.Debug("compacted LTX chain", "key", key, "inputs", len(plan))
	return nil
}
