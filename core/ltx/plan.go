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

// MarkerSize is the size of celld's epoch marker: a level-0 file with no
// pages (header, empty page header, empty page index, index length,
// trailer). A celld 0.6 paged epoch opens with one at cut+1.
const MarkerSize = 131

// PlanEpochs chooses which epochs' files form the newest chain of a cell,
// walking epochs from newest to oldest as celld 0.6 does: an epoch that
// starts at TXID 1 ends the walk; an epoch that continues an older one (it
// opens with a marker at cut+1) pulls in the older epoch's files below the
// cut, and an older epoch whose files do not end exactly at cut is skipped
// (a fenced owner's late upload). Epochs with no files are skipped. The
// result, given to Plan, yields the restore order.
//
// An epoch whose files start above TXID 1 continues an older one only when
// it opens with proof of it: celld's marker (a level-0 file of MarkerSize
// bytes at its lowest TXID) or a compacted file (level 1 and up, which
// celld's compactor starts at its epoch's base). Otherwise the epoch's own
// snapshot is missing, and its deltas would be laid over another epoch's
// state: PlanEpochs fails with *MissingSnapshotError.
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
	for i, e := range epochs {
		var kept []FileInfo
		var max TXID
		var opener *FileInfo // the epoch's lowest file; a marker or compacted file wins a tie
		for _, f := range byEpoch[e] {
			if loAbove != 0 && f.MaxTXID >= loAbove {
				continue
			}
			kept = append(kept, f)
			if f.MaxTXID > max {
				max = f.MaxTXID
			}
			if opener == nil || f.MinTXID < opener.MinTXID || (f.MinTXID == opener.MinTXID && opensContinuation(f) && !opensContinuation(*opener)) {
				o := f
				opener = &o
			}
		}
		if len(kept) == 0 {
			continue
		}
		if loAbove != 0 && max != loAbove-1 {
			continue
		}
		lo := opener.MinTXID
		if lo != 1 && !opensContinuation(*opener) {
			var older uint64
			if i+1 < len(epochs) {
				older = epochs[i+1]
			}
			return nil, &MissingSnapshotError{
				Cell: opener.Cell, Epoch: e, Older: older, First: opener.Key,
				Missing: Key(opener.Cell, e, 0, 1, lo-1),
			}
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

// opensContinuation reports whether f, an epoch's lowest file, shows that
// the epoch continues an older one: celld's zero-page marker, or a
// compacted file.
func opensContinuation(f FileInfo) bool {
	if f.Level >= 1 {
		return true
	}
	return f.MinTXID == f.MaxTXID && f.Size == MarkerSize
}
