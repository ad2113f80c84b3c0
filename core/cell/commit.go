package cell

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
)

// endTurn commits the turn's implicit transaction, hands the commit to the
// log and reschedules the alarm if the turn changed it. A failure resets
// the object and is returned as its *BrokenObjectError.
func (inst *instance) endTurn(ctx context.Context, ev *event) (err error) {
	ctx = context.WithoutCancel(ctx)
	inst.mu.Lock()
	defer inst.mu.Unlock()
	// The turn's WebSocket sends wait for what it committed (sockets.go).
	defer func() {
		if ev.hasFrames() {
			ev.releaseFrames(inst, inst.commits.snapshot(), err != nil)
		}
	}()
	inst.db.closeRows()
	if err := inst.g.err(); err != nil || inst.closed {
		inst.rollbackLocked(ctx)
		if err == nil {
			err = errRetired
		}
		return err
	}
	if conn := inst.db.conn; conn != nil && conn.InTransaction() {
		if err := inst.grant.CheckWrite(); err != nil {
			inst.rollbackLocked(ctx)
			return inst.breakNow(fmt.Sprintf("the write was refused: %v", err), err)
		}
		if err := inst.firstWriteLocked(ctx); err != nil {
			inst.rollbackLocked(ctx)
			return inst.breakNow(fmt.Sprintf("the first write's bookkeeping failed: %v", err), err)
		}
		if err := conn.Commit(ctx); err != nil {
			inst.rollbackLocked(ctx)
			return inst.breakNow(fmt.Sprintf("the local commit failed: %v", err), err)
		}
		inst.rt.metrics.Commit(ctx, inst.cls.name)
		if err := inst.logCommitsLocked(ctx); err != nil {
			return inst.breakNow(fmt.Sprintf("the commit could not be handed to the log: %v", err), err)
		}
	}
	inst.db.closeSpare(ctx)
	if inst.alarm.takeChanged() {
		row, err := inst.readAlarmLocked(ctx)
		if err != nil {
			return inst.breakNow(fmt.Sprintf("the alarm could not be read back: %v", err), err)
		}
		inst.rt.alarms.set(inst.cls, inst.id, row)
		if inst.rt.opts.Wake != nil {
			if err := inst.publishWakeLocked(ctx); err != nil {
				return inst.breakNow(fmt.Sprintf("the alarm's wake record could not be read back: %v", err), err)
			}
		}
	}
	return nil
}

// rollbackTurn abandons the turn's open transaction.
func (inst *instance) rollbackTurn() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.db.closeRows()
	inst.rollbackLocked(context.Background())
}

func (inst *instance) rollbackLocked(ctx context.Context) {
	inst.db.spDepth = 0
	inst.alarm.discard()
	if inst.db.conn == nil || inst.closed || !inst.db.conn.InTransaction() {
		return
	}
	if err := inst.db.conn.Rollback(ctx); err != nil {
		inst.rt.logger.Warn("cell rollback failed", "cell", inst.key, "err", err)
	}
}

// logCommitsLocked hands the commits just made to the log, in order: the
// captured pages when the driver captures them, else one commit (with an
// image taken right now, if the log wants one) when anything changed.
func (inst *instance) logCommitsLocked(ctx context.Context) error {
	db := &inst.db
	if db.virgin {
		return nil // the in-memory database stores nothing
	}
	if db.capturer != nil {
		commits, err := db.capturer.TakeCommits(ctx)
		if err != nil {
			return fmt.Errorf("take captured pages: %w", err)
		}
		if len(commits) > 0 {
			// Nothing goes to the log under an epoch not yet recorded.
			if err := inst.recordEpoch(ctx); err != nil {
				return err
			}
		}
		for i := range commits {
			inst.appendLocked(durability.Commit{Pages: &commits[i]})
		}
		return nil
	}
	if db.localLog {
		return nil // every local commit is durable: nothing to hand over
	}
	mark, err := readChangeMark(ctx, db.conn)
	if err != nil {
		return err
	}
	if mark == db.mark {
		return nil
	}
	db.mark = mark
	if err := inst.recordEpoch(ctx); err != nil {
		return err
	}
	c := durability.Commit{}
	if db.log.NeedsImage() && !durability.ReadsOwnImage(db.log) {
		img, err := db.conn.Serialize(ctx)
		if err != nil {
			return fmt.Errorf("serialize image: %w", err)
		}
		c.Image = img
	}
	inst.appendLocked(c)
	return nil
}

// appendLocked hands one commit to the log, numbered in order; replies
// wait for it (the tracker) and so does the next wake publication.
func (inst *instance) appendLocked(c durability.Commit) {
	inst.db.seq++
	c.Seq = inst.db.seq
	d := inst.db.log.Append(c)
	inst.wake.committed(d)
	inst.commits.track(d)
}

// changeMark tells, without page capture, whether a transaction wrote
// anything: SQLite counts changed rows per connection, and the schema and
// user versions move with DDL and user_version writes.
type changeMark struct{ changes, schema, user int64 }

// readChangeMark reads conn's change counters.
func readChangeMark(ctx context.Context, conn driver.Conn) (changeMark, error) {
	rows, err := conn.Query(ctx, sqlChangeMark)
	if err != nil {
		return changeMark{}, fmt.Errorf("read change counters: %w", err)
	}
	defer rows.Close()
	var m changeMark
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return m, err
		}
		return m, fmt.Errorf("read change counters: no row")
	}
	v := rows.Values()
	if len(v) != 3 {
		return m, fmt.Errorf("read change counters: %d columns", len(v))
	}
	for i, dst := range []*int64{&m.changes, &m.schema, &m.user} {
		n, ok := v[i].(int64)
		if !ok {
			return m, fmt.Errorf("read change counters: column %d is %T", i, v[i])
		}
		*dst = n
	}
	return m, rows.Err()
}

// awaitDurable is the output gate (the tracker's await), timed for the
// metrics when the reply waits for anything.
func (inst *instance) awaitDurable(ctx context.Context, ps pendingSet) (err error) {
	if len(ps.wait) > 0 && inst.rt.metrics != nil {
		start := inst.rt.clk.Now()
		defer func() { inst.rt.metrics.DurableWait(ctx, inst.cls.name, inst.rt.clk.Now().Sub(start), err) }()
	}
	return inst.commits.await(ctx, ps, nil)
}
