package ltxlog

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// compact merges this epoch's chain (its level-1 file, if any, and the
// level-0 files after it) into one level-1 file from TXID 1, uploads it, and
// only then deletes the files it replaces: at every moment the bucket holds
// a complete chain. It runs on the upload goroutine, between uploads, so
// the chain it reads cannot change under it.
func (c *cellLog) compact(ctx context.Context) error {
	inputs := append([]ltx.FileInfo(nil), c.l0Files...)
	if c.l1 != nil {
		inputs = append([]ltx.FileInfo{*c.l1}, inputs...)
	}
	plan, err := ltx.Plan(inputs)
	if err != nil {
		return fmt.Errorf("plan compaction: %w", err)
	}
	im := ltx.NewImage()
	var last ltx.Header
	for _, f := range plan {
		obj, err := c.opts.Store.Get(ctx, f.Key)
		if err != nil {
			return err
		}
		h, err := im.ApplyData(obj.Data)
		if err != nil {
			return err
		}
		last = h
	}
	img, err := im.Bytes()
	if err != nil {
		return err
	}
	ps := int(last.PageSize)
	lock := ltx.LockPgno(last.PageSize)
	pages := make([]driver.Page, 0, len(img)/ps)
	for off := 0; off+ps <= len(img); off += ps {
		pgno := uint32(off/ps) + 1
		if pgno == lock {
			continue
		}
		pages = append(pages, driver.Page{Pgno: pgno, Data: img[off : off+ps]})
	}
	h := ltx.Header{PageSize: last.PageSize, Commit: last.Commit, MinTXID: 1, MaxTXID: last.MaxTXID, Timestamp: last.Timestamp}
	data, err := ltx.Encode(h, pages)
	if err != nil {
		return err
	}
	key := ltx.Key(c.cell, c.epoch, 1, 1, last.MaxTXID)
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(last.Timestamp)}
	if _, err := c.opts.Store.Put(ctx, key, data, store.PutOptions{Metadata: md}); err != nil {
		return err
	}
	newL1 := ltx.FileInfo{Key: key, Cell: c.cell, Epoch: c.epoch, Level: 1, MinTXID: 1, MaxTXID: last.MaxTXID, Size: int64(len(data))}
	// The new file covers everything in plan; now the old files can go.
	var kept []ltx.FileInfo
	for _, f := range inputs {
		if f.Key == key {
			continue
		}
		if f.MaxTXID <= last.MaxTXID {
			if err := c.opts.Store.Delete(ctx, f.Key); err != nil {
				// Left-over files are harmless: the planner prefers the
				// level-1 file that covers them.
				c.log.Warn("could not delete a compacted LTX file", "key", f.Key, "err", err)
			}
			continue
		}
		kept = append(kept, f)
	}
	c.l1 = &newL1
	c.l0Files = kept[:0:0]
	for _, f := range kept {
		if f.Level == 0 {
			c.l0Files = append(c.l0Files, f)
		}
	}
	c.log.Debug("compacted LTX chain", "key", key, "inputs", len(plan))
	return nil
}
