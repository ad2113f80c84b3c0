package nodelog

import (
	"context"
	"errors"
	"sync"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// Overlay lists the rows of cell that its owner's node log holds and its
// own prefix may not (yet): the rows of the cell's current epoch in the
// owner's session's bundles, each as a level-0 file inside a bundle
// (ltx.FileInfo.InBundle, at Offset, Size bytes). A restore lays them over
// the per-cell chain, so a cell whose owner is alive restores with every
// row the owner has put in the bucket — including, possibly, a row whose
// acknowledgement was still pending or failed (its bundle stored, its
// credit not yet, or never, given).
//
// Rows the cell's prefix already covers (its highest TXID of the epoch, at
// any level) are left out: their bundles are only waiting for their
// deletion batch (gc.go), and a restore or a bookmark must rest on the
// prefix's files there, which outlive the bundles, not on rows inside a
// merged file.
//
// It reads the cell's record, its owner's record, lists the cell's epoch
// prefix and reads the owner session's bundle footers (two ranged reads
// per bundle). A cell that is released, or whose owner runs no node log,
// or whose log is sealed (recovered: the prefixes hold everything) has no
// overlay. A cell with no record at all gets the rows the node logs of
// single host processes hold of it (localOverlay), above what its prefix
// covers in each epoch.
func Overlay(ctx context.Context, s store.Store, cell string) ([]ltx.FileInfo, error) {
	ownKey := layout.OwnKey(cell)
	obj, err := store.GetData(ctx, s, ownKey)
	if store.IsNotFound(err) {
		// No record: a released fleet cell, or a single host's cell,
		// whose process's log may hold its newest rows.
		return localOverlay(ctx, s, cell)
	}
	if err != nil {
		return nil, err
	}
	rec, err := layout.DecodeOwnRecord(ownKey, obj.Data)
	if err != nil || rec.Node == "" {
		return nil, err
	}
	nodeKey := layout.NodeKey(rec.Node)
	nobj, err := store.GetData(ctx, s, nodeKey)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lease, err := layout.DecodeNodeLease(nodeKey, nobj.Data)
	if err != nil {
		return nil, err
	}
	if !lease.Log.NeedsRecovery() {
		return nil, nil
	}
	return sessionRows(ctx, s, rec.Node, lease.OwnershipIndexGeneration, cell, rec.Epoch, coveredOf(ctx, s, cell))
}

// coveredOf is Covered of the cell, read once per epoch asked about.
func coveredOf(ctx context.Context, s store.Store, cell string) func(epoch uint64) (ltx.TXID, error) {
	memo := map[uint64]ltx.TXID{}
	return func(epoch uint64) (ltx.TXID, error) {
		if c, ok := memo[epoch]; ok {
			return c, nil
		}
		c, err := Covered(ctx, s, cell, epoch)
		if err != nil {
			return 0, err
		}
		memo[epoch] = c
		return c, nil
	}
}

// footerConcurrency bounds the bundle footers an overlay reads at once: a
// busy node keeps up to about TierAge of flushes in the bucket.
const footerConcurrency = 16

// sessionRows lists a session's rows of one cell epoch (every epoch when
// epoch is 0) above what covered says the cell's prefix holds of that
// epoch, the first copy of each TXID, as bundle-resident level-0 files.
func sessionRows(ctx context.Context, s store.Store, node, generation, cell string, epoch uint64, covered func(epoch uint64) (ltx.TXID, error)) ([]ltx.FileInfo, error) {
	bundles, err := ListBundles(ctx, s, node, generation)
	if err != nil {
		return nil, err
	}
	footers := make([][]ltx.BundleRow, len(bundles))
	errs := make([]error, len(bundles))
	var wg sync.WaitGroup
	sem := make(chan struct{}, footerConcurrency)
	for i, b := range bundles {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rows, err := readFooter(ctx, s, b.Key, b.Info.Size)
			if store.IsNotFound(err) || errors.Is(err, store.ErrInvalidRange) {
				err = nil // deleted since listed: its rows are covered
			}
			footers[i], errs[i] = rows, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	type row struct {
		epoch uint64
		txid  ltx.TXID
	}
	seen := map[row]bool{}
	var out []ltx.FileInfo
	for i, b := range bundles {
		for _, r := range footers[i] {
			k := row{r.CellEpoch, r.TXID}
			if r.Cell != cell || (epoch != 0 && r.CellEpoch != epoch) || seen[k] || r.Len == 0 {
				continue
			}
			c, err := covered(r.CellEpoch)
			if err != nil {
				return nil, err
			}
			if r.TXID <= c {
				continue
			}
			seen[k] = true
			out = append(out, ltx.FileInfo{
				Key: b.Key, Cell: cell, Epoch: r.CellEpoch, Level: 0, MinTXID: r.TXID, MaxTXID: r.TXID,
				Size: int64(r.Len), Modified: b.Info.Modified, InBundle: true, Offset: int64(r.Offset),
			})
		}
	}
	return out, nil
}
