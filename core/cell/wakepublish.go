package cell

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/durability"
)

// WakePublisher publishes a cell's durable alarm changes to a fleet's wake
// index, so a cell that is not in memory is woken when its alarm falls due.
// A single host needs none (Options.Wake nil): its alarm timers cover every
// cell it ever ran.
type WakePublisher interface {
	// Publish is called, in commit order per cell, right after a commit
	// that changed the cell's alarm was handed to the durability log. p
	// describes the installation; durable resolves when that commit is
	// durable. The returned Durable resolves when the publication the
	// reply must wait for is done (celld: the entry PUT plus the
	// durability proof); the runtime makes the turn's reply (output gate)
	// wait for it exactly as it waits for durability, and a publication
	// that fails resets the object as a failed commit does.
	//
	// Publish runs while the cell's connection is locked, before the next
	// turn can commit: it must return at once (start the work, do not do
	// it) and must not call into the runtime. A nil result counts as
	// already done.
	Publish(p WakePublication, durable durability.Durable) durability.Durable
}

// WakePublication is one installation of a cell's alarm: what the commit
// left in the cell's _cf_WAKE row.
type WakePublication struct {
	// Cell is the cell key ("<Class>:<id>").
	Cell string
	// Epoch and Seq are the installation identity read from _cf_WAKE
	// after the commit: the writer's ownership epoch and the alarm's
	// change count. They never repeat for one cell.
	Epoch, Seq uint64
	// AtMs is the alarm's due time in Unix milliseconds, or nil when the
	// commit deleted the alarm (or, for an announcement, none is set).
	AtMs *int64
	// Announce marks the publication a cell makes with its first commit
	// after it opened under a new epoch, whether or not that commit
	// changed the alarm: the wake index learns the identity under the new
	// owner, which makes older entries (a dead owner's, migration seeds)
	// obsolete and gives an armed alarm an entry this owner retires.
	Announce bool
}

// WakePublishError is how a failed publication reaches a reply and the
// reset it causes (errors.As from the *BrokenObjectError).
type WakePublishError struct {
	Publication WakePublication
	Err         error
}

func (e *WakePublishError) Error() string {
	return fmt.Sprintf("the wake publication %016x-%016x of %s failed: %v", e.Publication.Epoch, e.Publication.Seq, e.Publication.Cell, e.Err)
}

func (e *WakePublishError) Unwrap() error { return e.Err }

// publishedDurable reports a publication's failure as a *WakePublishError,
// so the reset names the publication rather than a commit.
type publishedDurable struct {
	durability.Durable
	p WakePublication
}

func (d publishedDurable) Err() error {
	if err := d.Durable.Err(); err != nil {
		return &WakePublishError{Publication: d.p, Err: err}
	}
	return nil
}

// publishWakeLocked hands the alarm change a commit just made to the
// publisher. The triggers advance _cf_WAKE's sequence exactly when
// _cf_ALARM changes, so a sequence that did not move means the turn
// changed no alarm (a settle that found the alarm re-armed, a turn that
// only read it) and nothing is published. The caller holds inst.mu and
// has checked that Options.Wake is set.
func (inst *instance) publishWakeLocked(ctx context.Context) error {
	w, err := inst.readWakeLocked(ctx)
	if err != nil {
		return err
	}
	if w.seq == inst.wakeSeq && !inst.wakeAnnounce {
		return nil
	}
	announce := w.seq == inst.wakeSeq
	inst.wakeSeq, inst.wakeAnnounce = w.seq, false
	p := WakePublication{Cell: inst.key, Epoch: w.epoch, Seq: w.seq, AtMs: w.atMs, Announce: announce}
	committed := inst.lastCommit
	if committed == nil {
		committed = durability.Resolved(nil) // the local commit is durable
	}
	d := inst.rt.opts.Wake.Publish(p, committed)
	if d == nil {
		return nil
	}
	inst.trackLocked(publishedDurable{d, p})
	return nil
}
