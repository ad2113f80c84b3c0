package ltx

import (
	"sort"
)

// Plan chooses, among the files of one chain (any levels, possibly several
// epochs already selected by PlanEpochs), the files to apply in order to
// rebuild the newest image — the same choice celld's and Litestream's
// restore planners make, so CellB and celld restore the same bytes.
//
// Start from the newest snapshot-level (9) file if any; then repeatedly take,
// among files that start at or before the next TXID and end after the
// current one, the one reaching furthest (ties: the smaller MinTXID, then
// the higher level, then the earlier Modified time). A file starting beyond
// the next TXID that is never bridged is a gap (*GapError). No files at all
// is ErrTxNotAvailable.
func Plan(files []FileInfo) ([]FileInfo, error) {
	return PlanTo(files, 0)
}

// PlanTo is Plan limited to files ending at or before target (0 = no
// limit). The result must end exactly at target, or PlanTo fails with
// *TXIDNotRestorableError.
func PlanTo(files []FileInfo, target TXID) ([]FileInfo, error) {
	var cand []FileInfo
	for _, f := range files {
		if f.MinTXID == 0 || f.MinTXID > f.MaxTXID || f.Level < 0 || f.Level > MaxLevel {
			continue
		}
		if target != 0 && f.MaxTXID > target {
			continue
		}
		cand = append(cand, f)
	}
	if len(cand) == 0 {
		if target != 0 && len(files) > 0 {
			return nil, &TXIDNotRestorableError{Want: target}
		}
		return nil, ErrTxNotAvailable
	}
	var plan []FileInfo
	var cur TXID
	// A snapshot-level file (starting at TXID 1) starts the chain.
	var snap *FileInfo
	for i := range cand {
		f := &cand[i]
		if f.Level == MaxLevel && f.MinTXID == 1 && (snap == nil || better(*f, *snap)) {
			snap = f
		}
	}
	if snap != nil {
		plan = append(plan, *snap)
		cur = snap.MaxTXID
	}
	for {
		var best *FileInfo
		for i := range cand {
			f := &cand[i]
			if f.MinTXID > cur+1 || f.MaxTXID <= cur {
				continue
			}
			if best == nil || better(*f, *best) {
				best = f
			}
		}
		if best == nil {
			break
		}
		plan = append(plan, *best)
		cur = best.MaxTXID
	}
	// Anything still starting beyond the chain is a gap the chain never
	// bridged.
	var gapAt TXID
	for _, f := range cand {
		if f.MinTXID > cur+1 && (gapAt == 0 || f.MinTXID < gapAt) {
			gapAt = f.MinTXID
		}
	}
	if gapAt != 0 {
		return nil, &GapError{Epoch: cand[0].Epoch, After: cur, Next: gapAt}
	}
	if len(plan) == 0 {
		return nil, ErrTxNotAvailable
	}
	if target != 0 && cur != target {
		return nil, &TXIDNotRestorableError{Want: target, Nearest: cur}
	}
	return plan, nil
}

// better reports whether a is preferred over b as the next file of a chain.
func better(a, b FileInfo) bool {
	if a.MaxTXID != b.MaxTXID {
		return a.MaxTXID > b.MaxTXID
	}
	if a.MinTXID != b.MinTXID {
		return a.MinTXID < b.MinTXID
	}
	if a.Level != b.Level {
		return a.Level > b.Level
	}
	return a.Modified.Before(b.Modified)
}

// PlanEpochs chooses which epochs' files form the newest chain of a cell,
// walking epochs from newest to oldest as celld 0.6 does: an epoch that
// starts at TXID 1 ends the walk; an epoch that continues an older one (it
// opens with a marker at cut+1) pulls in the older epoch's files below the
// cut, and an older epoch whose files do not end exactly at cut is skipped
// (a fenced owner's late upload). Epochs with no files are skipped. The
// result, given to Plan, yields the restore order.
func PlanEpochs(files []FileInfo) ([]FileInfo, error) {
	byEpoch := map[uint64][]FileInfo{}
	var epochs []uint64
	for _, f := range files {
		if _, seen := byEpoch[f.Epoch]; !seen {
			epochs = append(epochs, f.Epoch)
		}
		byEpoch[f.Epoch] = append(byEpoch[f.Epoch], f)
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i] > epochs[j] })
	var chain []FileInfo
	var loAbove TXID // lowest MinTXID of the kept epoch above; 0 = none kept yet
	for _, e := range epochs {
		var kept []FileInfo
		var max TXID
		lo := TXID(0)
		for _, f := range byEpoch[e] {
			if loAbove != 0 && f.MaxTXID >= loAbove {
				continue
			}
			kept = append(kept, f)
			if f.MaxTXID > max {
				max = f.MaxTXID
			}
			if lo == 0 || f.MinTXID < lo {
				lo = f.MinTXID
			}
		}
		if len(kept) == 0 {
			continue
		}
		if loAbove != 0 && max != loAbove-1 {
			continue
		}
		chain = append(chain, kept...)
		loAbove = lo
		if lo == 1 {
			return chain, nil
		}
	}
	if len(chain) == 0 {
		return nil, ErrTxNotAvailable
	}
	// The walk ran out of epochs before finding the chain's start.
	return nil, &GapError{Epoch: chain[len(chain)-1].Epoch, After: 0, Next: loAbove}
}
