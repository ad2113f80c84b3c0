package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// The kinds of Finding.
const (
	// FindRecordLost: own.json is missing but a log holds an epoch of 1 or
	// more. Repairable.
	FindRecordLost = "record-lost"
	// FindStaleEpoch: own.json's epoch is below the newest epoch of the
	// log. Repairable.
	FindStaleEpoch = "stale-epoch"
	// FindMalformedRecord: own.json does not decode. Not repaired: repair
	// does not overwrite a record it cannot read.
	FindMalformedRecord = "malformed-record"
	// FindMissingSnapshot: the LTX log's newest epoch lost its snapshot
	// (*ltx.MissingSnapshotError). Not repairable by a record.
	FindMissingSnapshot = "missing-snapshot"
	// FindGap: the LTX chain has a gap (*ltx.GapError). Not repairable by
	// a record.
	FindGap = "gap"
	// FindCorruptFile: a file of the LTX log does not verify (header,
	// pages, checksums) or holds other TXIDs than its key names; found
	// only with Options.Verify. Not repairable by a record.
	FindCorruptFile = "corrupt-file"
	// FindOwnerLog: the record's dead owner is a celld node whose node log
	// must be recovered (by a celld node) before the cell changes hands.
	FindOwnerLog = "owner-log-unrecovered"
)

// Finding is one thing wrong with a cell.
type Finding struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Repairable: the released record at the newest epoch fixes it.
	Repairable bool  `json:"repairable"`
	Err        error `json:"-"`
}

// judge lists what is wrong with a cell read by readCell.
func judge(c *Cell, rec *layout.OwnRecord, recErr error, ltxFiles []ltx.FileInfo) []Finding {
	fs := []Finding{}
	own := layout.OwnKey(c.Key)
	switch {
	case recErr != nil:
		fs = append(fs, Finding{Kind: FindMalformedRecord, Err: recErr, Message: fmt.Sprintf(
			"%v; repair does not overwrite a record it cannot read: move %s aside (keep a copy) and run repair again", recErr, own)})
	case rec == nil && c.LogEpoch >= 1:
		fs = append(fs, Finding{Kind: FindRecordLost, Repairable: true, Message: fmt.Sprintf(
			"%s is missing, but the log holds epoch %d", own, c.LogEpoch)})
	case rec != nil && rec.Epoch < c.LogEpoch:
		fs = append(fs, Finding{Kind: FindStaleEpoch, Repairable: true, Message: fmt.Sprintf(
			"%s is at epoch %d, behind the log's newest epoch %d", own, rec.Epoch, c.LogEpoch)})
	}
	if len(ltxFiles) > 0 {
		chain, err := ltx.PlanEpochs(ltxFiles)
		if err == nil {
			_, err = ltx.Plan(chain)
		}
		if ms, ok := errorsAs[*ltx.MissingSnapshotError](err); ok {
			fs = append(fs, Finding{Kind: FindMissingSnapshot, Err: ms, Message: ms.Error()})
		} else if g, ok := errorsAs[*ltx.GapError](err); ok {
			fs = append(fs, Finding{Kind: FindGap, Err: g, Message: fmt.Sprintf("%v; put the missing files back from a copy of the bucket", g)})
		}
	}
	return fs
}

// Plan is a diagnosis and the repair it calls for.
type Plan struct {
	Cell *Cell
	// Key is the ownership record's key.
	Key string
	// Write is the record the repair writes, nil when there is nothing to
	// write; Condition is how: create-only when the record is missing, a
	// compare-and-swap on the version read otherwise.
	Write     *layout.OwnRecord
	Condition store.Condition
}

// Healthy reports whether the cell has no finding at all.
func (p *Plan) Healthy() bool { return len(p.Cell.Findings) == 0 }

// Diagnose reads one cell and plans its repair. The plan's Write is the
// released record at the newest epoch when the record is lost or behind
// the log. Diagnose also returns an error, with the plan, when the repair
// cannot be made or would not suffice:
//   - *HeldError: a live node holds the cell (Write is nil);
//   - *UnrepairableError: findings a record does not fix (a malformed
//     record, a lost snapshot, a gap, a celld owner's unrecovered log);
//     Write is still set when the record needs the repair too.
//
// A cell the bucket holds nothing for is a *NoCellError (and no plan); a
// failed read is returned as is.
func Diagnose(ctx context.Context, s store.Store, cell string, opts Options) (*Plan, error) {
	c := readCell(ctx, s, opts, cell, opts.clock().Now().UnixMilli(), newLeaseCache(), wakeIndex{}, true)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Err != nil && c.Record != RecordMalformed {
		return nil, c.Err
	}
	if c.Record == RecordMissing && c.LogObjects == 0 {
		return nil, &NoCellError{Cell: cell}
	}
	// In a bucket only single-host nodes wrote, a cell has no record to
	// lose: writing one would make every other cell look lost.
	if err := judgeAsTheBucket(ctx, s, opts, c); err != nil {
		return nil, err
	}
	p := &Plan{Cell: c, Key: layout.OwnKey(cell)}
	var unrepairable []Finding
	repair := false
	for _, f := range c.Findings {
		if f.Repairable {
			repair = true
		} else {
			unrepairable = append(unrepairable, f)
		}
	}
	if repair && c.OwnerLive {
		return p, &HeldError{Cell: cell, Node: c.Owner, ExpiresMs: c.ownerLease.ExpiresMs}
	}
	if repair && c.ownerLease != nil && c.ownerLease.Log.NeedsRecovery() {
		how := "any CellB or celld node recovers it when it takes one of its cells (a call for this one, or an alarm's wake): the repair is then not needed"
		if !c.ownerLease.Log.BucketRecoverable() {
			how = "it is active (acknowledgements rode on celld followers), so only a celld node can recover it: start one on the bucket"
		}
		f := Finding{Kind: FindOwnerLog, Message: fmt.Sprintf(
			"the owner %s died with its node log %s, whose bundles may hold acknowledged commits this cell's prefix lacks; %s", c.Owner, c.ownerLease.Log.State, how)}
		c.Findings = append(c.Findings, f)
		return p, &UnrepairableError{Cell: cell, Findings: append(unrepairable, f)}
	}
	if repair {
		p.Write = &layout.OwnRecord{Node: "", Epoch: c.LogEpoch}
		p.Condition = store.IfVersion(c.version)
		if c.Record == RecordMissing {
			p.Condition = store.IfAbsent
		}
	}
	if len(unrepairable) > 0 {
		return p, &UnrepairableError{Cell: cell, Findings: unrepairable}
	}
	return p, nil
}

// ErrNothingToWrite: Apply was given a plan without a write.
var ErrNothingToWrite = errors.New("the plan writes nothing")

// Apply writes the plan's record with its condition. A record that
// changed (or appeared) since Diagnose read it is a *ConflictError and
// nothing is written. A write whose outcome is unknown (store.ErrAmbiguous)
// is read back: it applied when the record is the one planned.
func Apply(ctx context.Context, s store.Store, p *Plan) (store.Version, error) {
	if p == nil || p.Write == nil {
		return "", ErrNothingToWrite
	}
	v, err := s.Put(ctx, p.Key, p.Write.Encode(), store.PutOptions{Condition: p.Condition})
	if store.IsAmbiguous(err) {
		// The write may have applied: read it back. The record we meant to
		// write means it did (or someone wrote the same); anything else
		// means it did not, or was overwritten since.
		obj, rerr := s.Get(ctx, p.Key)
		if rerr == nil {
			if rec, derr := layout.DecodeOwnRecord(p.Key, obj.Data); derr == nil && rec == *p.Write {
				return obj.Version, nil
			}
			return "", &ConflictError{Key: p.Key, Err: err}
		}
		if store.IsNotFound(rerr) {
			return "", fmt.Errorf("%s is still missing after a write whose answer was lost; nothing was written (run repair again): %w", p.Key, err)
		}
	}
	if store.IsPreconditionFailed(err) {
		return "", &ConflictError{Key: p.Key, Err: err}
	}
	return v, err
}
