// Package wakeport is the port between the runtime (core/cell) and a
// fleet's wake index (core/wake): the contract by which a cell that is not
// in memory is still woken when its alarm falls due. It sits beside the
// other ports (core/lease, core/durability, core/store) so that neither
// side imports the other: the runtime calls a Publisher, the wake service
// calls a Waker, and the composition root (cmd/cellb) hands each to the
// other.
//
// The contract, in the order a cell meets it:
//
//   - When a cell opens under a new ownership epoch, its first commit
//     (whether or not it changes the alarm) is published with
//     Publication.Announce set, so the index learns the installation
//     identity under the new owner.
//   - Every later commit that changes the cell's alarm is published, in
//     commit order per cell, right after the commit was handed to the
//     durability log; a commit that leaves the alarm alone publishes
//     nothing.
//   - The publisher writes the entry, waits until the commit is durable,
//     and only then resolves what it returned; the runtime holds the
//     turn's reply on that, exactly as on durability, and a failed
//     publication resets the object (as a *PublishError).
//   - After that, the publisher retires the entries the publication makes
//     obsolete; the runtime does not wait for retirement.
//   - The wake service calls Waker.Wake for a cell whose entry is due; the
//     cell's own alarm row alone decides whether a handler runs.
//
// A single host needs none of this: without a Publisher the runtime
// publishes nothing, and its alarm timers cover every cell it ever ran.
package wakeport

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/durability"
)

// Publisher publishes a cell's durable alarm changes to a fleet's wake
// index. core/wake's Service implements it; a runtime is given one in
// cell.Options.Wake.
type Publisher interface {
	// Publish is called, in commit order per cell, right after a commit
	// that changed the cell's alarm (or the first commit under a new
	// epoch: p.Announce) was handed to the durability log. p describes
	// the installation; durable resolves when that commit is durable.
	// The returned Durable resolves when the publication the reply must
	// wait for is done (celld: the entry PUT plus the durability proof);
	// the runtime makes the turn's reply (output gate) wait for it
	// exactly as it waits for durability, and a publication that fails
	// resets the object as a failed commit does.
	//
	// Publish runs while the cell's connection is locked, before the next
	// turn can commit: it must return at once (start the work, do not do
	// it) and must not call into the runtime. A nil result counts as
	// already done.
	Publish(p Publication, durable durability.Durable) durability.Durable
}

// Publication is one installation of a cell's alarm: what the commit left
// in the cell's _cf_WAKE row.
type Publication struct {
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

// PublishError is how a failed publication reaches a reply and the reset
// it causes (errors.As from the runtime's *cell.BrokenObjectError).
type PublishError struct {
	Publication Publication
	Err         error
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("the wake publication %016x-%016x of %s failed: %v", e.Publication.Epoch, e.Publication.Seq, e.Publication.Cell, e.Err)
}

func (e *PublishError) Unwrap() error { return e.Err }

// Waker activates a cell so that its stored alarm runs if it is due; the
// runtime (*cell.Runtime) implements it, and the wake service calls it for
// due entries.
type Waker interface {
	// Wake activates the cell named by cellKey ("<Class>:<id>") as a
	// request would and returns once the activation has finished; a cell
	// already in memory is left alone.
	Wake(ctx context.Context, cellKey string) error
}
