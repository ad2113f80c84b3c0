package cell

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/wakeport"
)

// endTurn commits the turn's implicit transaction, hands the commit to the
// log and reschedules the alarm if the turn changed it. A failure resets
// the object and is returned as its *BrokenObjectError.
func (inst *instance) endTurn(ctx context.Context, ev *event) error {
	ctx = context.WithoutCancel(ctx)
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.closeRowsLocked()
	if err := inst.g.err(); err != nil || inst.closed {
		inst.rollbackLocked(ctx)
		if err == nil {
			err = errRetired
		}
		return err
	}
	if inst.conn != nil && inst.conn.InTransaction() {
		if err := inst.grant.CheckWrite(); err != nil {
			inst.rollbackLocked(ctx)
			return inst.breakNow(fmt.Sprintf("the write was refused: %v", err), err)
		}
		if err := inst.firstWriteLocked(ctx); err != nil {
			inst.rollbackLocked(ctx)
			return inst.breakNow(fmt.Sprintf("the first write's bookkeeping failed: %v", err), err)
		}
		if err := inst.conn.Commit(ctx); err != nil {
			inst.rollbackLocked(ctx)
			return inst.breakNow(fmt.Sprintf("the local commit failed: %v", err), err)
		}
		inst.rt.metrics.Commit(ctx, inst.cls.name)
		if err := inst.logCommitsLocked(ctx); err != nil {
			return inst.breakNow(fmt.Sprintf("the commit could not be handed to the log: %v", err), err)
		}
	}
	inst.closeSpareLocked(ctx)
	if inst.alarmSet {
		inst.alarmSet = false
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
	inst.closeRowsLocked()
	inst.rollbackLocked(context.Background())
}

func (inst *instance) rollbackLocked(ctx context.Context) {
	inst.spDepth = 0
	inst.alarmSet = false
	if inst.conn == nil || inst.closed || !inst.conn.InTransaction() {
		return
	}
	if err := inst.conn.Rollback(ctx); err != nil {
		inst.rt.logger.Warn("cell rollback failed", "cell", inst.key, "err", err)
	}
}

// logCommitsLocked hands the commits just made to the log, in order: the
// captured pages when the driver captures them, else one commit (with an
// image taken right now, if the log wants one) when anything changed.
func (inst *instance) logCommitsLocked(ctx context.Context) error {
	if inst.lazy.virgin {
		return nil // the in-memory database stores nothing
	}
	if inst.capturer != nil {
		commits, err := inst.capturer.TakeCommits(ctx)
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
	if inst.localLog {
		return nil // every local commit is durable: nothing to hand over
	}
	mark, err := inst.readMarkLocked(ctx)
	if err != nil {
		return err
	}
	if mark == inst.mark {
		return nil
	}
	inst.mark = mark
	if err := inst.recordEpoch(ctx); err != nil {
		return err
	}
	c := durability.Commit{}
	if inst.log.NeedsImage() && !durability.ReadsOwnImage(inst.log) {
		img, err := inst.conn.Serialize(ctx)
		if err != nil {
			return fmt.Errorf("serialize image: %w", err)
		}
		c.Image = img
	}
	inst.appendLocked(c)
	return nil
}

func (inst *instance) appendLocked(c durability.Commit) {
	inst.seq++
	c.Seq = inst.seq
	d := inst.log.Append(c)
	inst.lastCommit = d
	inst.trackLocked(d)
}

// trackLocked adds d (a commit, or a wake publication) to what later
// replies wait for, in order, and resets the object if d fails.
func (inst *instance) trackLocked(d durability.Durable) {
	inst.pmu.Lock()
	inst.pending = append(inst.pending, d)
	inst.tracked++
	inst.pmu.Unlock()
	select {
	case <-d.Done(): // already known (a local log): no watcher needed
		if err := d.Err(); err != nil {
			go inst.breakNow(failureReason(err), err)
		}
		return
	default:
	}
	// Watch d even if no reply waits for it, so a failure resets the
	// object whoever is (or is not) waiting.
	go func() {
		select {
		case <-d.Done():
		case <-inst.done:
			return
		}
		if err := d.Err(); err != nil {
			inst.breakNow(failureReason(err), err)
		}
	}()
}

// failureReason words the reset a failed Durable causes.
func failureReason(err error) string {
	var perr *wakeport.PublishError
	if errors.As(err, &perr) {
		return err.Error()
	}
	return fmt.Sprintf("a commit failed to become durable: %v", err)
}

// changeMark tells, without page capture, whether a transaction wrote
// anything: SQLite counts changed rows per connection, and the schema and
// user versions move with DDL and user_version writes.
type changeMark struct{ changes, schema, user int64 }

func (inst *instance) readMarkLocked(ctx context.Context) (changeMark, error) {
	rows, err := inst.conn.Query(ctx, sqlChangeMark)
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

// pending is what a reply produced now must wait for: the commits not yet
// known durable, and upTo, how many commits had been tracked, so the
// grant is checked after them even when they were all durable by the
// time the reply looked.
type pendingSet struct {
	wait []durability.Durable
	upTo uint64
}

// pendingSnapshot is the commits a reply produced now must wait for.
func (inst *instance) pendingSnapshot() pendingSet {
	inst.pmu.Lock()
	defer inst.pmu.Unlock()
	i := 0
	for i < len(inst.pending) {
		select {
		case <-inst.pending[i].Done():
			if inst.pending[i].Err() != nil {
				// Keep failures visible to every later reply.
				return pendingSet{slices.Clip(inst.pending[i:]), inst.tracked}
			}
			i++
			continue
		default:
		}
		break
	}
	inst.pending = inst.pending[i:]
	// Not a copy: pending only ever drops from the front and appends past
	// its end, so the elements a clipped slice shows never change.
	return pendingSet{slices.Clip(inst.pending), inst.tracked}
}

// ackCheck is one run of the grant's acknowledgement check
// (lease.CheckAck: for a fleet grant, a fresh read of own.json) shared by
// every reply it covers. upTo is the largest tracked count whose commits
// were all durable before the check started: only replies up to it may be
// released by it. It is fixed once the check starts; while queued it grows
// with each reply that joins (each joins only once its commits are
// durable); when it starts, it also covers every commit then known durable.
type ackCheck struct {
	upTo uint64
	done chan struct{}
	err  error // set before done closes
}

// checkAck returns once a grant check that started after the commits up
// to upTo were durable has succeeded: celld's acknowledgement rule, one
// check for many replies. The caller has seen every commit up to upTo
// durable. A reply covered by an earlier check returns at once; one the
// check in flight covers waits for it; any other waits for the next check,
// which starts when the one in flight ends and covers every reply queued
// by then. So at most one check is in flight and one queued per instance,
// however many replies wait, and no reply is released by a check that
// started before its commits were durable.
func (inst *instance) checkAck(ctx context.Context, upTo uint64) error {
	inst.pmu.Lock()
	if upTo <= inst.ackChecked {
		inst.pmu.Unlock()
		return nil
	}
	var c *ackCheck
	switch {
	case inst.ackRun == nil:
		// This reply runs the check itself (a lone caller hands nothing
		// to another goroutine), with its context's values but not its
		// cancellation: the answer is shared.
		c = &ackCheck{upTo: max(upTo, inst.durableUpToLocked()), done: make(chan struct{})}
		inst.ackRun = c
		inst.pmu.Unlock()
		if next := inst.runAckCheck(context.WithoutCancel(ctx), c); next != nil {
			go inst.runAckChecks(context.WithoutCancel(ctx), next)
		}
		return c.err
	case inst.ackRun.upTo >= upTo:
		c = inst.ackRun
	default:
		if inst.ackNext == nil {
			inst.ackNext = &ackCheck{done: make(chan struct{})}
		}
		inst.ackNext.upTo = max(inst.ackNext.upTo, upTo)
		c = inst.ackNext
	}
	inst.pmu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// durableUpToLocked is how many tracked commits are known durable, all
// of them in order: a check starting now may cover them all, not only the
// commits of the reply that starts it (replies released by one upload
// then share one check).
func (inst *instance) durableUpToLocked() uint64 {
	n := inst.tracked - uint64(len(inst.pending)) // dropped: durable
	for _, d := range inst.pending {
		if !isDurable(d) {
			break
		}
		n++
	}
	return n
}

func isDurable(d durability.Durable) bool {
	select {
	case <-d.Done():
		return d.Err() == nil
	default:
		return false
	}
}

// runAckChecks runs c, then the check queued behind it, if any, until
// none is queued.
func (inst *instance) runAckChecks(ctx context.Context, c *ackCheck) {
	for c != nil {
		c = inst.runAckCheck(ctx, c)
	}
}

// runAckCheck runs c, the check in flight, releases its waiters and
// returns the check queued behind it (now in flight), if any, for the
// caller to run.
func (inst *instance) runAckCheck(ctx context.Context, c *ackCheck) *ackCheck {
	err := inst.ackCheck(ctx)
	inst.pmu.Lock()
	defer inst.pmu.Unlock()
	c.err = err
	if err == nil {
		inst.ackChecked = max(inst.ackChecked, c.upTo)
	}
	close(c.done)
	next := inst.ackNext
	inst.ackNext = nil
	if next != nil {
		next.upTo = max(next.upTo, inst.durableUpToLocked())
	}
	inst.ackRun = next
	return next
}

// ackCheck is the grant's check before a reply leaves: its
// acknowledgement check (lease.CheckAck: for a fleet grant, a re-read of
// own.json), or only CheckWrite when the log's durability already proves
// ownership (durability.ProvesOwnership: the node log).
func (inst *instance) ackCheck(ctx context.Context) error {
	if durability.ProvesOwnership(inst.log) {
		return inst.grant.CheckWrite()
	}
	return lease.CheckAck(ctx, inst.grant)
}

// awaitDurable is the output gate: it returns once every commit in snap is
// durable and the grant still allows acknowledging writes.
func (inst *instance) awaitDurable(ctx context.Context, ps pendingSet) (err error) {
	snap := ps.wait
	if len(snap) > 0 && inst.rt.metrics != nil {
		start := inst.rt.clk.Now()
		defer func() { inst.rt.metrics.DurableWait(ctx, inst.cls.name, inst.rt.clk.Now().Sub(start), err) }()
	}
	for _, d := range snap {
		select {
		case <-d.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := d.Err(); err != nil {
			return inst.breakNow(failureReason(err), err)
		}
	}
	// Checked after durability, for every reply that follows a commit the
	// grant was not checked after: a commit already durable when the
	// reply looked (a fast log) is checked all the same.
	if err := inst.checkAck(ctx, ps.upTo); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return inst.breakNow(fmt.Sprintf("the write was refused: %v", err), err)
	}
	return nil
}
