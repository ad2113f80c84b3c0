package cell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/metrics"
)

// instance is one live incarnation of a cell: its gate, its open database,
// its log and its object. A broken or evicted instance is never reused;
// the next call builds a fresh one from durable state.
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

	// mu guards the connection and the transaction state; it is held only
	// for the duration of one driver call, never while user code runs.
	mu       sync.Mutex
	conn     driver.Conn
	path     string // the database file
	capturer driver.PageCapturer
	log      durability.CellLog
	localLog bool // the log is durability.Local: commits need no hand-over
	grant    lease.Grant
	closed   bool
	seq      uint64
	mark     changeMark
	rows     map[*Rows]struct{}
	alarmSet bool      // a turn wrote _cf_ALARM: reschedule after commit
	firing   *alarmRow // the alarm whose handler is running
	// ctorSetAlarm: the constructor called SetAlarm before the object
	// existed (a class registered with an interface type).
	ctorSetAlarm bool
	userCode     atomic.Bool
	denial       *DeniedError
	userSQL      string // the user statement text the authorizer is asked about
	spDepth      int

	// wakeSeq is the _cf_WAKE sequence last seen (at open, or by the last
	// publication): a commit that moved it changed the alarm.
	wakeSeq uint64
	// wakeAnnounce: the cell opened under a new epoch and has not yet
	// published its installation under it. The first commit publishes it
	// whether or not the alarm changed, so the wake index learns the new
	// identity: older entries (a dead owner's, migration seeds) become
	// obsolete, and an armed alarm gets an entry this owner retires.
	wakeAnnounce bool
	// lastCommit is the newest commit handed to the log (nil: none, or a
	// local log), which a wake publication waits for.
	lastCommit durability.Durable

	lazy lazyState

	pmu     sync.Mutex
	pending []durability.Durable // commits and wake publications not yet known done, in order
	// tracked counts what was ever added to pending; ackChecked is the
	// count up to which the grant was checked after durability. A reply
	// whose snapshot reaches past ackChecked checks the grant even when
	// everything it waits for was already durable (and so left pending)
	// by the time it looked.
	tracked, ackChecked uint64
	// ackRun is the grant check in flight (nil: none) and ackNext the one
	// queued behind it, for replies whose commits became durable after
	// ackRun started: at most one of each per instance (see ackCheck).
	ackRun, ackNext *ackCheck
}

// event is one call into an object: a request, an RPC, an alarm, the
// constructor. It travels in the handler's context, so goroutines the
// handler starts with that context (a fan-out of stub calls) share it.
type event struct {
	inst   *instance
	active atomic.Bool // holds the gate and is not yielded: storage allowed

	// mu guards what the handler and goroutines yielding with its context
	// share.
	mu       sync.Mutex
	holding  bool // holds the gate
	yields   int  // yields in progress (concurrent stub calls share one)
	finished bool // the handler returned: a late yield must not take the gate back
	bcw      int  // BlockConcurrencyWhile depth: yields keep the gate
	// breakAfter, if set, resets the object once the turn has committed
	// (an alarm handler that panicked: its failure is recorded first).
	breakAfter *BrokenObjectError
}

func (ev *event) isHolding() bool {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.holding
}

// finishing marks the handler as returned and reports whether it holds
// the gate.
func (ev *event) finishing() bool {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.finished = true
	return ev.holding
}

type eventKey struct{}

func eventFrom(ctx context.Context) *event {
	ev, _ := ctx.Value(eventKey{}).(*event)
	return ev
}

func newInstance(rt *Runtime, cls *class, id ID, prev *instance) *instance {
	inst := &instance{
		rt:   rt,
		cls:  cls,
		id:   id,
		key:  CellKey(cls.name, id),
		prev: prev,
		done: make(chan struct{}),
		rows: map[*Rows]struct{}{},
	}
	inst.st = &State{inst: inst}
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
	if _, ok := obj.(Alarmer); cerr == nil && inst.ctorSetAlarm && !ok {
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
	path, err := DatabasePath(rt.opts.DataDir, inst.key)
	if err != nil {
		return err
	}
	inst.path = path
	if grant.BucketWins() {
		// The bucket wins: whatever the local file holds (an earlier
		// ownership's state, commits that never became durable) is never
		// read. The log restores the bucket's newest state into an empty
		// database, and a bucket holding nothing for the cell leaves it
		// empty.
		if err := discardDatabase(path); err != nil {
			return err
		}
	}
	// Whether pages are captured is decided here, once: the driver must
	// capture them and the log must want commits (Local does not). The
	// log is told so in its OpenRequest.
	inst.localLog = isLocalLog(rt.log)
	stored, err := inst.holdsState(ctx)
	if err != nil {
		return err
	}
	if !stored {
		return inst.openEmpty(ctx)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := inst.openFile(ctx, true); err != nil {
		return err
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.capturer == nil && !inst.localLog {
		if inst.mark, err = inst.readMarkLocked(ctx); err != nil {
			return err
		}
	}
	ready, err := inst.readyLocked(ctx)
	if err != nil {
		return err
	}
	if !ready {
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
	inst.alarmSet = true // schedule whatever alarm the database holds
	go inst.watchLease()
	return nil
}

// openFile opens the cell's database file and its log. restore asks the
// log to restore an empty database (see durability.OpenRequest.Restore).
// The caller holds inst.mu, or the activation's gate before any turn.
func (inst *instance) openFile(ctx context.Context, restore bool) error {
	rt := inst.rt
	conn, capturer, err := inst.openConn(ctx)
	if err != nil {
		return err
	}
	if restore {
		empty, err := databaseIsEmpty(ctx, conn)
		if err != nil {
			conn.Close()
			return fmt.Errorf("database size: %w", err)
		}
		restore = inst.grant.BucketWins() || empty
	}
	req := durability.OpenRequest{
		Cell:          inst.key,
		Epoch:         inst.grant.Epoch(),
		Conn:          conn,
		Restore:       restore,
		PagesCaptured: capturer != nil,
	}
	if !inst.grant.BucketWins() && !inst.localLog {
		// Local primary: the log syncs the local file once per group
		// commit, beside the group's upload (docs/durability.md).
		path := inst.path
		req.SyncLocal = func() error { return durability.SyncDatabaseFiles(path) }
	}
	cl, err := rt.log.Open(ctx, req)
	if err != nil {
		conn.Close()
		return fmt.Errorf("open log: %w", err)
	}
	if err := conn.SetAuthorizer(inst.authorize); err != nil {
		cl.Close(ctx, false)
		conn.Close()
		return fmt.Errorf("install authorizer: %w", err)
	}
	inst.conn, inst.capturer, inst.log = conn, capturer, cl
	return nil
}

// bookkeepLocked writes celld's tables, the actor's name and the wake
// row's epoch into the open transaction (beginning one if none is open).
func (inst *instance) bookkeepLocked(ctx context.Context) error {
	conn := inst.conn
	if !conn.InTransaction() {
		if err := conn.Begin(ctx); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, schemaSQL); err != nil {
		conn.Rollback(ctx)
		return fmt.Errorf("create celld tables: %w", err)
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

// discardDatabase removes a cell's database file and the journal files
// SQLite keeps beside it, so the next open starts an empty database.
func discardDatabase(path string) error {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("discard the local database: %w", err)
		}
	}
	return nil
}

func isLocalLog(l durability.Log) bool {
	switch l.(type) {
	case durability.Local, *durability.Local:
		return true
	}
	return false
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
	inst.rt.logger.Error("cell handler panicked", "cell", inst.key, "panic", p.Value, "stack", string(p.Stack))
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
		if err := inst.awaitDurable(ctx, inst.pendingSnapshot()); err != nil {
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
	snap := inst.pendingSnapshot()
	ev.active.Store(false)
	ev.mu.Lock()
	ev.holding = false
	ev.mu.Unlock()
	inst.releaseGate()
	if err != nil {
		return err
	}
	if err := inst.awaitDurable(ctx, snap); err != nil {
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

// yield ends the turn of the handler ctx belongs to (committing its
// transaction), runs fn without the gate, and queues the handler again at
// the back of the gate. Outside a turn it just runs fn. Inside
// BlockConcurrencyWhile the turn still commits but the gate is kept.
//
// Goroutines sharing the handler's context may yield at the same time (a
// fan-out of stub calls): the first ends the turn, the last to come back
// takes it again.
func yield(ctx context.Context, fn func(ctx context.Context) error) error {
	ev := eventFrom(ctx)
	if ev == nil {
		return fn(ctx)
	}
	ev.mu.Lock()
	switch {
	case ev.yields > 0 && !ev.finished:
		ev.yields++ // the turn is already yielded by a sibling goroutine
		ev.mu.Unlock()
		return ev.resume(ctx, fn(ctx))
	case ev.finished || !ev.active.Load():
		// Not in a turn: the event ended, or ctx is used inside Await.
		ev.mu.Unlock()
		return fn(ctx)
	}
	inst := ev.inst
	inst.mu.Lock()
	inSavepoint := inst.spDepth > 0
	inst.mu.Unlock()
	if inSavepoint {
		ev.mu.Unlock()
		return ErrYieldInTransaction
	}
	if err := inst.endTurn(ctx, ev); err != nil {
		ev.mu.Unlock()
		return err
	}
	ev.active.Store(false)
	ev.yields = 1
	if ev.bcw == 0 {
		ev.holding = false
		inst.releaseGate()
	}
	ev.mu.Unlock()
	return ev.resume(ctx, fn(ctx))
}

// resume ends one yield; the last one back takes the turn again (waiting
// for the gate at the back of the queue, unless BlockConcurrencyWhile kept
// it).
func (ev *event) resume(ctx context.Context, ferr error) error {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.yields--
	if ev.yields > 0 || ev.finished {
		return ferr
	}
	inst := ev.inst
	if ev.bcw == 0 {
		if err := inst.g.acquire(ctx); err != nil {
			return err
		}
		ev.holding = true
	} else if err := inst.g.err(); err != nil {
		return err
	}
	ev.active.Store(true)
	return ferr
}

// Await runs fn outside the object's gate: the calling handler's turn ends
// (its transaction commits), other events may run while fn blocks, and the
// handler continues in a new turn once fn returns and the gate comes round
// again. Use it for any blocking I/O that is not a stub call (stub calls
// yield by themselves). fn must not use the object's storage; called
// outside a handler, Await just runs fn.
//
// Inside BlockConcurrencyWhile the gate is kept: no other event runs.
func Await[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	var out T
	err := yield(ctx, func(ctx context.Context) error {
		var err error
		out, err = fn(ctx)
		return err
	})
	return out, err
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
	inst.closeRowsLocked()
	inst.closeSpareLocked(ctx)
	var errs []error
	if inst.conn != nil && inst.conn.InTransaction() {
		if err := inst.conn.Rollback(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if inst.log != nil {
		if err := inst.log.Close(ctx, final); err != nil {
			errs = append(errs, fmt.Errorf("close log: %w", err))
		}
	}
	if inst.conn != nil {
		if err := inst.conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close database: %w", err))
		}
	}
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

// databaseIsEmpty reports whether a database holds nothing yet: no pages, or
// (a driver that set WAL mode on a new file has already written page 1) no
// schema object at all. Only such a database is restored when the local file
// is the primary copy.
func databaseIsEmpty(ctx context.Context, conn driver.Conn) (bool, error) {
	pages, err := conn.PageCount(ctx)
	if err != nil || pages == 0 {
		return pages == 0, err
	}
	rows, err := conn.Query(ctx, "SELECT count(*) FROM sqlite_schema")
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var n int64 = -1
	for rows.Next() {
		if err := driver.ScanValues(rows.Values(), &n); err != nil {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	return n == 0, nil
}
