package cell

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
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
// the new connection captures from the image the old one left.

// releaseIdle is the idle-connection timer: it waits for what is still
// pending to become durable, then, if the object is still idle, takes its
// gate and closes the connection.
func (inst *instance) releaseIdle() {
	for _, d := range inst.pendingSnapshot().wait {
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
	if inst.closed || inst.conn == nil || inst.conn.InTransaction() || inst.spDepth > 0 || len(inst.rows) > 0 {
		return false, nil
	}
	if len(inst.pendingSnapshot().wait) > 0 {
		return false, nil // a commit came in the meantime: its event restarts the timer
	}
	var rb durability.Rebinder
	if !inst.lazy.virgin && !inst.localLog {
		var ok bool
		if rb, ok = inst.log.(durability.Rebinder); !ok {
			return false, nil
		}
	}
	if rb != nil {
		if err := rb.Rebind(ctx, nil); err != nil {
			inst.rt.logger.Warn("cell: the log kept the idle connection", "cell", inst.key, "err", err)
			return false, nil
		}
	}
	inst.closeSpareLocked(ctx)
	err := inst.conn.Close()
	inst.conn, inst.capturer = nil, nil
	return true, err
}

// reopenLocked opens the connection an idle object released, before a
// turn uses storage. The grant must still allow writes: an owner fenced
// while idle is reset instead. The caller holds inst.mu inside a turn.
func (inst *instance) reopenLocked(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if err := inst.grant.CheckWrite(); err != nil {
		return err
	}
	if inst.lazy.virgin {
		conn, err := inst.openMemory(ctx)
		if err != nil {
			return err
		}
		inst.conn = conn
		return nil
	}
	conn, capturer, err := inst.openConn(ctx)
	if err != nil {
		return err
	}
	if err := conn.SetAuthorizer(inst.authorize); err != nil {
		conn.Close()
		return fmt.Errorf("install authorizer: %w", err)
	}
	if rb, ok := inst.log.(durability.Rebinder); ok && !inst.localLog {
		if err := rb.Rebind(ctx, conn); err != nil {
			conn.Close()
			return fmt.Errorf("rebind the log: %w", err)
		}
	}
	inst.conn, inst.capturer = conn, capturer
	// SQLite counts changes per connection: the counters start afresh.
	if capturer == nil && !inst.localLog {
		if inst.mark, err = inst.readMarkLocked(ctx); err != nil {
			return err
		}
	}
	if inst.lazy.book {
		if inst.lazy.bookMark, err = inst.readMarkLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// openConn opens the cell's database file through the driver, capturing
// pages when the driver can and the log wants commits.
func (inst *instance) openConn(ctx context.Context) (driver.Conn, driver.PageCapturer, error) {
	rt := inst.rt
	capture := rt.opts.Driver.Capabilities().PageCapture && !inst.localLog
	conn, err := rt.opts.Driver.Open(ctx, driver.Config{Path: inst.path, PageCapture: capture, Pages: &rt.pages})
	if err != nil {
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	var capturer driver.PageCapturer
	if capture {
		if pc, ok := conn.(driver.PageCapturer); ok {
			capturer = pc
		}
	}
	return conn, capturer, nil
}
