package cell

import (
	"context"
	"fmt"
)

// An open object that has had no event in flight for
// Options.IdleConnTimeout gives up its database connection and stays open
// (docs/runtime.md, "Idle connections"): its object, grant, log, alarm and
// place among the open cells are kept; the connection's memory and file
// descriptors are not. The next storage use in a turn (lockTurn) opens a
// new connection on the same file, through the driver's ordinary open,
// with no restore and no discarding of the local file: the cell was owned
// all along and its file is current. A cell still on its in-memory
// database (lazy.go) holds nothing, so its connection is dropped and a new
// empty one opened.
//
// The connection is kept while anything depends on it: an open
// transaction or savepoint, rows, a commit (or wake publication) not yet
// durable, or a log that holds per-connection state and cannot move it
// (it is neither durability.Local nor a durability.Rebinder). With page
// capture, every commit's pages were taken right after it (endTurn), so
// the new connection captures from the image the old one left. The
// connection's side of this is database.release and database.reopen.

// releaseIdle is the idle-connection timer: it waits for what is still
// pending to become durable, then, if the object is still idle, takes its
// gate and closes the connection.
func (inst *instance) releaseIdle() {
	for _, d := range inst.commits.snapshot().wait {
		select {
		case <-d.Done():
		case <-inst.done:
			return
		}
	}
	if !inst.g.holdIfIdle() {
		return // an event came: its end starts the timer again
	}
	ctx := inst.rt.bg
	inst.mu.Lock()
	released, err := inst.releaseConnLocked(ctx)
	inst.mu.Unlock()
	if err != nil {
		inst.breakNow(fmt.Sprintf("the idle cell's database did not close: %v", err), err)
	} else if released {
		inst.rt.logger.Debug("cell connection released", "cell", inst.key)
	}
	if inst.g.unhold() {
		go inst.shutdown(inst.rt.bg, false)
	}
}

// releaseConnLocked closes the connection of an idle object if nothing
// depends on it, and reports whether it did. An error is the close's: the
// connection is gone either way. The caller holds the gate and inst.mu.
func (inst *instance) releaseConnLocked(ctx context.Context) (bool, error) {
	if inst.closed {
		return false, nil
	}
	if len(inst.commits.snapshot().wait) > 0 {
		return false, nil // a commit came in the meantime: its event restarts the timer
	}
	return inst.db.release(ctx)
}

// reopenLocked opens the connection an idle object released, before a
// turn uses storage. The grant must still allow writes: an owner fenced
// while idle is reset instead. The caller holds inst.mu inside a turn.
func (inst *instance) reopenLocked(ctx context.Context) (err error) {
	ctx = context.WithoutCancel(ctx)
	if err := inst.grant.CheckWrite(); err != nil {
		return err
	}
	if err := inst.db.reopen(ctx); err != nil {
		return err
	}
	if inst.lazy.book {
		// SQLite counts changes per connection: the counters start afresh.
		inst.lazy.bookMark, err = readChangeMark(ctx, inst.db.conn)
	}
	return err
}
