package cell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/coder/websocket"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/metrics"
)

// instance is one live incarnation of a cell: its gate, its open database,
// its log and its object. A broken or evicted instance is never reused;
// the next call builds a fresh one from durable state.
//
// It is made of named parts, each a state machine of its own file: the
// input gate (gate.go), the connection and its log (database.go), the
// commits a reply waits for (tracker.go), the alarm's flags
// (alarmstate.go), the wake publication state (wakestate.go) and the
// authorizer's view of the running statement (authorizer.go). The
// instance itself holds the lifecycle: activation, events and turns
// (event.go), resets, eviction and shutdown.
type instance struct {
	rt   *Runtime
	cls  *class
	id   ID
	key  string
	prev *instance // predecessor still shutting down, if any

	g    gate
	done chan struct{} // closed once everything below is released

	st  *State
	obj any

	// mu guards closed and the parts below but commits (which has its own
	// lock); it is held only for the duration of one driver call, never
	// while user code runs.
	mu     sync.Mutex
	grant  lease.Grant // set at open, before any turn; never changes
	closed bool        // shut down: the connection and the log are gone
	db     database
	guard  stmtGuard
	lazy   lazyState
	alarm  alarmState
	wake   wakeState
	// commits is what replies wait for: the output gate.
	commits tracker

	// Sockets (the WebSockets the object accepted) outlive the instance
	// (an idle object is evicted while its sockets stay open), so the
	// runtime keeps them per cell key (sockets.go): a send waits for
	// commits (commits.snapshot) as a reply does, breakNow closes them
	// with 1011 and the runtime's Close with 1012.
}

func newInstance(rt *Runtime, cls *class, id ID, prev *instance) *instance {
	key := CellKey(cls.name, id)
	inst := &instance{
		rt:   rt,
		cls:  cls,
		id:   id,
		key:  key,
		prev: prev,
		done: make(chan struct{}),
	}
	inst.st = &State{inst: inst}
	inst.db = database{
		drv:       rt.opts.Driver,
		pages:     &rt.pages,
		logs:      rt.log,
		authorize: inst.guard.authorize,
		logger:    rt.logger,
		key:       key,
		rows:      map[*Rows]struct{}{},
	}
	inst.commits.done = inst.done
	inst.commits.fail = func(reason string, cause error) error { return inst.breakNow(reason, cause) }
	inst.g.clk = rt.clk
	inst.g.idleAfter = rt.idle
	inst.g.onIdle = func() { go inst.evictIdle() }
	inst.g.releaseAfter = rt.connIdle
	inst.g.onRelease = func() { go inst.releaseIdle() }
	// The activation is the first event: it holds the gate from birth.
	inst.g.held = true
	inst.g.inflight = 1
	return inst
}

// activate opens the cell and runs the constructor, holding the gate.
func (inst *instance) activate() {
	ctx := inst.rt.bg
	ev := &event{inst: inst, holding: true}
	defer inst.g.leave()
	// Recorded before leave: until then no eviction can retire the
	// instance, so its gate's error is the activation's own.
	defer inst.recordActivation(inst.rt.clk.Now())
	defer ev.finishing()
	if inst.prev != nil {
		select {
		case <-inst.prev.done:
		case <-ctx.Done():
			inst.failActivation(ctx.Err())
			return
		}
	}
	if err := inst.open(ctx); err != nil {
		inst.failActivation(err)
		return
	}
	ev.active.Store(true)
	tctx := context.WithValue(ctx, eventKey{}, ev)
	var obj any
	var cerr error
	if p := protect(func() { obj, cerr = inst.cls.construct(tctx, inst.st) }); p != nil {
		cerr = p
	}
	if err := inst.g.err(); err != nil {
		// BlockConcurrencyWhile failed in the constructor: already broken.
		ev.active.Store(false)
		inst.rollbackTurn()
		inst.releaseGate()
		return
	}
	if _, ok := obj.(Alarmer); cerr == nil && inst.alarm.setBeforeObject && !ok {
		cerr = &NoAlarmHandlerError{Class: inst.cls.name}
	}
	if cerr != nil {
		ev.active.Store(false)
		inst.rollbackTurn()
		inst.failActivation(fmt.Errorf("constructor: %w", cerr))
		return
	}
	inst.obj = obj
	if err := inst.endTurn(ctx, ev); err != nil {
		ev.active.Store(false)
		inst.releaseGate()
		return
	}
	ev.active.Store(false)
	inst.releaseGate()
}

// open acquires the lease and opens the cell. A cell that holds nothing
// yet (no local file, and a log that holds nothing for it) opens on an
// in-memory database and creates its file only with its first write (see
// lazy.go); a stored cell is opened, restored if need be, and read, not
// written: celld's tables and the epoch's bookkeeping are written with the
// first write.
func (inst *instance) open(ctx context.Context) error {
	rt := inst.rt
	grant, err := rt.lease.TryAcquire(ctx, inst.key)
	if err != nil {
		return err
	}
	inst.grant = grant
	inst.commits.grant = grant
	inst.commits.provesOwnership = &inst.db.provesOwnership
	path, err := DatabasePath(rt.opts.DataDir, inst.key)
	if err != nil {
		return err
	}
	inst.db.path = path
	// Whether pages are captured is decided here, once: the driver must
	// capture them and the log must want commits (Local does not). The
	// log is told so in its OpenRequest.
	inst.db.localLog = isLocalLog(rt.log)
	if err := inst.checkRestartMark(ctx, grant, path); err != nil {
		return err
	}
	// A local-primary cell asked to restore a bookmark on its next
	// session (restorenext.go) is restored from the bucket this once.
	marked := false
	if !grant.BucketWins() && !inst.db.localLog {
		if marked, _, err = readRestoreMark(path); err != nil {
			return err
		}
	}
	if grant.BucketWins() || marked {
		// The bucket wins: whatever the local file holds (an earlier
		// ownership's state, commits that never became durable) is never
		// read. The log restores the bucket's newest state into an empty
		// database, and a bucket holding nothing for the cell leaves it
		// empty.
		if err := discardDatabase(path); err != nil {
			return err
		}
	}
	stored, err := inst.db.holdsState(ctx)
	if err != nil {
		return err
	}
	if !stored {
		return inst.openEmpty(ctx)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := inst.db.openFile(ctx, grant, true); err != nil {
		return err
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if err := inst.db.readMark(ctx); err != nil {
		return err
	}
	rr, fromRequest := inst.db.restoredFromRequest()
	if marked && !fromRequest {
		// The request was dropped before the mark (its snapshot is
		// stored): the bucket's newest state, just restored, is current.
		if err := rt.removeRestoreMark(path, grant.Epoch()); err != nil {
			return err
		}
	}
	ready := false
	if !fromRequest {
		if ready, err = inst.readyLocked(ctx); err != nil {
			return err
		}
	}
	if fromRequest {
		// A restore on the next session: the epoch's bookkeeping is
		// written now, so its snapshot of the restored state goes up
		// (and the request is dropped) without waiting for a write,
		// and the restored alarm is cleared.
		if err := inst.recordEpoch(ctx); err != nil {
			return err
		}
		if err := inst.bookkeepLocked(ctx); err != nil {
			return err
		}
		if err := inst.clearRestoredAlarm(ctx); err != nil {
			inst.db.conn.Rollback(ctx)
			return err
		}
		if marked {
			go inst.settleRestoreMark(rr)
		}
	} else if !ready {
		// A database from before some of celld's tables (or without
		// them), or a fleet that announces its new epoch's wake identity
		// at once: write the bookkeeping now, in the activation's
		// transaction, as it always was.
		if err := inst.recordEpoch(ctx); err != nil {
			return err
		}
		if err := inst.bookkeepLocked(ctx); err != nil {
			return err
		}
	}
	inst.alarm.markChanged() // schedule whatever alarm the database holds
	go inst.watchLease()
	return nil
}

// bookkeepLocked writes celld's tables, the actor's name and the wake
// row's epoch into the open transaction (beginning one if none is open).
func (inst *instance) bookkeepLocked(ctx context.Context) error {
	conn := inst.db.conn
	if !conn.InTransaction() {
		if err := conn.Begin(ctx); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, schemaSQL); err != nil {
		conn.Rollback(ctx)
		return fmt.Errorf("create celld tables: %w", err)
	}
	if err := inst.adoptForeignLocked(ctx); err != nil {
		conn.Rollback(ctx)
		return err
	}
	if name := inst.id.Name(); name != "" {
		if _, err := conn.Exec(ctx, sqlPutMetadata, inst.key, name); err != nil {
			conn.Rollback(ctx)
			return fmt.Errorf("record actor name: %w", err)
		}
	}
	if err := inst.initWakeLocked(ctx); err != nil {
		conn.Rollback(ctx)
		return err
	}
	inst.lazy.book = false
	return nil
}

// failActivation fails every waiter with an ActivationError and releases
// whatever was opened. The next call tries afresh.
func (inst *instance) failActivation(err error) {
	aerr := &ActivationError{Key: inst.key, Err: err}
	inst.rt.warnUnlessRoutine("cell activation failed", err, "cell", inst.key)
	inst.rt.forget(inst)
	inst.g.failHeld(aerr)
	inst.shutdown(inst.rt.bg, false)
}

// watchLease breaks the instance when its grant is lost.
func (inst *instance) watchLease() {
	select {
	case <-inst.grant.Lost():
		if cause := inst.grant.Err(); !errors.Is(cause, lease.ErrReleased) {
			inst.breakNow(fmt.Sprintf("the cell's lease was lost: %v", cause), cause)
		}
	case <-inst.done:
	}
}

// run executes fn as one event: it waits for the gate, runs fn in a turn,
// commits, releases the gate and waits behind the output gate.
func (inst *instance) run(ctx context.Context, fn func(ctx context.Context, obj any) error) error {
	if err := inst.g.enter(ctx); err != nil {
		return err
	}
	defer inst.g.leave()
	ev := &event{inst: inst, holding: true}
	ev.active.Store(true)
	return inst.turn(ctx, ev, fn)
}

// turn runs fn while ev holds the gate and finishes the event.
func (inst *instance) turn(ctx context.Context, ev *event, fn func(ctx context.Context, obj any) error) error {
	tctx := context.WithValue(ctx, eventKey{}, ev)
	var userErr error
	if p := protect(func() { userErr = fn(tctx, inst.obj) }); p != nil {
		return inst.panicked(ev, "a handler panicked: "+fmt.Sprint(p.Value), p)
	}
	return inst.finish(ctx, ev, userErr)
}

// panicked handles a panic in user code: roll back the turn's open
// transaction and reset the object.
func (inst *instance) panicked(ev *event, reason string, p *PanicError) error {
	inst.logPanic("cell handler panicked", p)
	if !ev.finishing() {
		return inst.breakNow(reason, p)
	}
	ev.active.Store(false)
	inst.rollbackTurn()
	berr := inst.breakNow(reason, p)
	ev.mu.Lock()
	ev.holding = false
	ev.mu.Unlock()
	inst.releaseGate()
	return berr
}

// finish ends the event's last turn and waits behind the output gate.
func (inst *instance) finish(ctx context.Context, ev *event, userErr error) error {
	if !ev.finishing() {
		// A yield could not get the gate back (the object broke, or ctx
		// ended), or a goroutine the handler left behind is still yielded;
		// the turn has already ended.
		if err := inst.g.err(); err != nil {
			return err
		}
		// The reply still waits for what was committed before it.
		if err := inst.awaitReply(ctx, inst.commits.snapshot()); err != nil {
			return err
		}
		if userErr != nil {
			return userErr
		}
		return ctx.Err()
	}
	err := inst.endTurn(ctx, ev)
	if err == nil && ev.breakAfter != nil {
		err = inst.breakNow(ev.breakAfter.Reason, ev.breakAfter.Err)
	}
	snap := inst.commits.snapshot()
	ev.active.Store(false)
	ev.mu.Lock()
	ev.holding = false
	ev.mu.Unlock()
	inst.releaseGate()
	if err != nil {
		return err
	}
	if err := inst.awaitReply(ctx, snap); err != nil {
		return err
	}
	return userErr
}

// releaseGate hands the gate on, or shuts the instance down if it broke.
func (inst *instance) releaseGate() {
	if inst.g.release() {
		go inst.shutdown(inst.rt.bg, false)
	}
}

// breakNow resets the object: queued and later callers of this instance
// get a BrokenObjectError, the open transaction never commits, and the
// next call builds a fresh instance. The first reason wins.
func (inst *instance) breakNow(reason string, cause error) *BrokenObjectError {
	berr := &BrokenObjectError{Key: inst.key, Reason: reason, Err: cause}
	// Leave the live map before failing the waiters, so a caller that
	// retries at once reaches a fresh instance.
	inst.rt.forget(inst)
	first, shutdown := inst.g.fail(berr)
	if first == error(berr) {
		inst.rt.logger.Warn("cell reset", "cell", inst.key, "reason", reason)
		// The reset object's sockets go with it (celld's 1011).
		inst.rt.sockets.closeCell(inst.key, websocket.StatusInternalError, "the object was reset")
	}
	if shutdown {
		go inst.shutdown(inst.rt.bg, false)
	}
	var out *BrokenObjectError
	if errors.As(first, &out) {
		return out
	}
	return &BrokenObjectError{Key: inst.key, Reason: "it was retired: " + first.Error(), Err: first}
}

// evictIdle is the idle timeout: it evicts the object unless its alarm is
// due within Options.AlarmResidency, in which case the object stays and
// the countdown starts again (so it is not evicted and activated again
// moments later, or, in a fleet, handed over between epochs for nothing).
func (inst *instance) evictIdle() {
	if r := inst.rt.residency; r > 0 && inst.rt.alarms.dueWithin(inst.key, r) {
		inst.g.idleAgain()
		return
	}
	if inst.evictIfIdle() {
		inst.rt.metrics.Evicted(inst.rt.bg, inst.cls.name, metrics.EvictIdle)
	}
}

// evictIfIdle retires an object with no event in flight, and reports
// whether it did.
func (inst *instance) evictIfIdle() bool {
	if !inst.g.retireIfIdle(errRetired) {
		return false
	}
	inst.rt.forget(inst)

	inst.shutdown(inst.rt.bg, true)
	return true
}

// shutdown releases the instance's resources once. final says whether
// the log may flush (an orderly close or eviction) or is dropped (a reset
// or EvictAll, modelling a crash).
func (inst *instance) shutdown(ctx context.Context, final bool) error {
	inst.mu.Lock()
	if inst.closed {
		inst.mu.Unlock()
		<-inst.done
		return nil
	}
	inst.closed = true
	errs := inst.db.close(ctx, final)
	if inst.grant != nil {
		if err := inst.grant.Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("release lease: %w", err))
		}
	}
	inst.mu.Unlock()
	inst.rt.forget(inst)
	inst.rt.retired(inst)
	close(inst.done)
	err := errors.Join(errs...)
	if err != nil {
		inst.rt.logger.Warn("cell shutdown", "cell", inst.key, "err", err)
		return fmt.Errorf("cell %s: %w", inst.key, err)
	}
	return nil
}

// protect runs fn and turns a panic into a *PanicError.
func protect(fn func()) (p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	fn()
	return nil
}
