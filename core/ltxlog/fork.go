package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

var _ durability.Forker = (*Log)(nil)

// Fork implements durability.Forker (see the package function Fork).
func (l *Log) Fork(ctx context.Context, req durability.ForkRequest) (durability.ForkResult, error) {
	return Fork(ctx, l.opts.Store, req)
}

// forkAttempts bounds the restarts of a fork whose source files were
// replaced by a compaction while it copied.
const forkAttempts = 5

// Fork copies the restore plan of req.Source at req.At (the newest state
// when zero) into req.Dest's log, in epoch req.Epoch: each file of the plan
// becomes the file of the same level and TXID range under the
// destination's epoch, copied inside the bucket (store.Copy: the store's
// Copier, so a cell of any size forks in a few requests per file and no
// cell-sized data passes through the node). Rows of the source owner's
// node log not yet tiered (nodelog.Overlay) are single commits; they are
// streamed into files of their own. The destination then holds one epoch
// whose chain restores exactly the source's state at the bookmark, and its
// next activation, under a newer epoch, restores it like any cell's.
//
// The destination must hold nothing yet: any object under its prefix but
// its ownership record (which the caller's grant wrote) is a
// *durability.ForkDestinationWrittenError, and so is a copy that meets an
// object (every copy is create-only). A fork that fails deletes what it
// copied, so the destination stays never written; files are copied newest
// first, so a fork cut short before it could (the node died) leaves no
// chain from TXID 1 and the destination's next activation fails to restore
// rather than restoring an older state. A source file replaced by a
// compaction during the copy restarts the fork from a fresh listing.
//
// The alarm is in the copied database (celld's _cf_ALARM, keyed by the
// source's cell key); the destination's runtime drops it, and adopts the
// source's storage as its own, in its first commit (core/cell).
func Fork(ctx context.Context, s store.Store, req durability.ForkRequest) (durability.ForkResult, error) {
	if req.Source == req.Dest {
		return durability.ForkResult{}, &durability.ForkDestinationWrittenError{Cell: req.Dest, What: "it is the source"}
	}
	if req.Epoch == 0 {
		return durability.ForkResult{}, &durability.NoForkError{Cell: req.Source, Reason: "the destination's grant has no epoch to write the copy under (fork needs a fleet or shard lease)"}
	}
	if err := checkNeverWritten(ctx, s, req.Dest); err != nil {
		return durability.ForkResult{}, err
	}
	for attempt := 1; ; attempt++ {
		res, copied, err := forkOnce(ctx, s, req)
		if err == nil {
			return res, nil
		}
		// Remove what this attempt copied (the caller's grant keeps
		// everyone else out), so that a failed fork leaves the destination
		// never written and can be tried again.
		if derr := removeCopies(ctx, s, copied); derr != nil {
			return durability.ForkResult{}, errors.Join(err, derr)
		}
		if !store.IsNotFound(err) || attempt == forkAttempts {
			return durability.ForkResult{}, err
		}
		// A source file went away (compacted): start again from a fresh
		// listing.
	}
}

// removeCopies deletes the destination files a failed attempt wrote, even
// after ctx ended.
func removeCopies(ctx context.Context, s store.Store, keys []string) error {
	ctx = context.WithoutCancel(ctx)
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return fmt.Errorf("fork: remove %s after a failed attempt: %w", k, err)
		}
	}
	return nil
}

// checkNeverWritten fails unless the bucket holds nothing of cell but its
// ownership record.
func checkNeverWritten(ctx context.Context, s store.Store, cell string) error {
	prefix := layout.CellPrefix(cell)
	page, err := s.List(ctx, store.ListOptions{Prefix: prefix, Limit: 2})
	if err != nil {
		return err
	}
	for _, o := range page.Objects {
		if o.Key != layout.OwnKey(cell) {
			return &durability.ForkDestinationWrittenError{Cell: cell, What: o.Key}
		}
	}
	return nil
}

// forkOnce copies the plan once; copied lists the destination keys it
// wrote, for a retry to remove.
func forkOnce(ctx context.Context, s store.Store, req durability.ForkRequest) (res durability.ForkResult, copied []string, err error) {
	overlay, err := nodelog.Overlay(ctx, s, req.Source)
	if err != nil {
		return res, nil, fmt.Errorf("fork: read the node log of %s's owner: %w", req.Source, err)
	}
	chain, err := findChainUpTo(ctx, s, req.Source, 0, req.At.Epoch, overlay)
	if err != nil {
		return res, nil, fmt.Errorf("fork %s: %w", req.Source, err)
	}
	plan, err := ltx.PlanTo(chain, ltx.TXID(req.At.TXID))
	if err != nil {
		return res, nil, fmt.Errorf("fork %s at %s: %w", req.Source, req.At, err)
	}
	last := plan[len(plan)-1]
	if req.At.Epoch != 0 && last.Epoch != req.At.Epoch {
		return res, nil, &EpochNotRestorableError{Cell: req.Source, Epoch: req.At.Epoch}
	}
	res.At = durability.Bookmark{Epoch: last.Epoch, TXID: uint64(last.MaxTXID)}
	for _, f := range slices.Backward(plan) {
		dst := ltx.Key(req.Dest, req.Epoch, f.Level, f.MinTXID, f.MaxTXID)
		if f.InBundle {
			err = copyBundleRow(ctx, s, f, dst)
		} else {
			_, err = store.Copy(ctx, s, f.Key, dst)
			if err == nil {
				res.Copied++
			}
		}
		if store.IsPreconditionFailed(err) {
			return res, copied, &durability.ForkDestinationWrittenError{Cell: req.Dest, What: dst}
		}
		if err != nil {
			return res, copied, fmt.Errorf("fork: copy %s to %s: %w", f.Key, dst, err)
		}
		copied = append(copied, dst)
		res.Files++
	}
	return res, copied, nil
}

// copyBundleRow streams one node-log row (a verbatim level-0 file inside a
// bundle) into a file of its own, create-only, with the timestamp
// metadata every LTX upload carries.
func copyBundleRow(ctx context.Context, s store.Store, f ltx.FileInfo, dst string) error {
	r, err := store.NewRangeReader(ctx, s, f.Key, f.Offset, f.Size)
	if errors.Is(err, store.ErrInvalidRange) {
		err = fmt.Errorf("%w: the bundle changed since it was listed", store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	hb := make([]byte, ltx.HeaderSize)
	if _, err := io.ReadFull(r, hb); err != nil {
		return &ltx.CorruptError{Key: f.Key, Reason: fmt.Sprintf("bundle row at %d shorter than a header: %v", f.Offset, err)}
	}
	h, err := ltx.DecodeHeader(hb)
	if err != nil {
		return withKey(err, f.Key)
	}
	md := map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(h.Timestamp)}
	_, err = store.PutFrom(ctx, s, dst, io.MultiReader(bytes.NewReader(hb), r), f.Size, store.PutOptions{Condition: store.IfAbsent, Metadata: md})
	return err
}
