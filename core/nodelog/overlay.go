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
// It reads the cell's record, its owner's record and the owner session's
// bundle footers (two ranged reads per bundle). A cell that is released,
// or whose owner runs no node log, or whose log is sealed (recovered: the
// prefixes hold everything) has no overlay. A cell with no record at all
// gets the rows the node logs of single host processes hold of it
// (localOverlay).
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
	return sessionRows(ctx, s, rec.Node, lease.OwnershipIndexGeneration, cell, rec.Epoch)
}

// footerConcurrency bounds the bundle footers an overlay reads at once: a
// busy node keeps up to about TierAge of flushes in the bucket.
const footerConcurrency = 16

// sessionRows lists a session's rows of one cell epoch (every epoch when
// epoch is 0), the first copy of each TXID, as bundle-resident level-0
// files.
func sessionRows(ctx context.Context, s store.Store, node, generation, cell string, epoch uint64) ([]ltx.FileInfo, error) {
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
			seen[k] = true
			out = append(out, ltx.FileInfo{
				Key: b.Key, Cell: cell, Epoch: r.CellEpoch, Level: 0, MinTXID: r.TXID, MaxTXID: r.TXID,
				Size: int64(r.Len), Modified: b.Info.Modified, InBundle: true, Offset: int64(r.Offset),
			})
		}
	}
	return out, nil
}
