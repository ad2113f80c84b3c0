package cell

import (
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/wakeport"
)

// wakeState is what an instance remembers between commits to tell a
// fleet's wake index about its alarm (the _cf_WAKE identity, see
// wakerecord.go): the row's sequence last seen, whether the epoch the
// cell opened under is still to be announced, and the newest commit a
// publication must wait for. It exists so that what a commit publishes is
// decided in one step (publication), testable without a database. The
// instance's mu guards it.
type wakeState struct {
	// seq is the _cf_WAKE sequence last seen (at open, or by the last
	// publication): a commit that moved it changed the alarm.
	seq uint64
	// announce: the cell opened under a new epoch and has not yet
	// published its installation under it. The first commit publishes it
	// whether or not the alarm changed, so the wake index learns the new
	// identity: older entries (a dead owner's, migration seeds) become
	// obsolete, and an armed alarm gets an entry this owner retires.
	announce bool
	// lastCommit is the newest commit handed to the log (nil: none, or a
	// local log), which a publication waits for.
	lastCommit durability.Durable
}

// opened records the row's sequence as read at open, and whether the
// epoch must be announced by the first commit.
func (w *wakeState) opened(seq uint64, announce bool) {
	w.seq, w.announce = seq, announce
}

// committed records the newest commit handed to the log.
func (w *wakeState) committed(d durability.Durable) { w.lastCommit = d }

// publication decides what the commit that left row (the committed
// _cf_WAKE row of the cell key) publishes: nothing when the sequence did
// not move and there is no epoch to announce (the triggers advance it
// exactly when _cf_ALARM changes), else the publication and the commit it
// must wait for (a resolved one when nothing was handed to a log). It
// remembers what it published.
func (w *wakeState) publication(key string, row wakeRow) (p wakeport.Publication, after durability.Durable, ok bool) {
	if row.seq == w.seq && !w.announce {
		return wakeport.Publication{}, nil, false
	}
	announce := row.seq == w.seq
	w.seq, w.announce = row.seq, false
	after = w.lastCommit
	if after == nil {
		after = durability.Resolved(nil) // the local commit is durable
	}
	return wakeport.Publication{Cell: key, Epoch: row.epoch, Seq: row.seq, AtMs: row.atMs, Announce: announce}, after, true
}
