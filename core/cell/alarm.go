package cell

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
)

// Alarmer is implemented by objects that handle alarms.
type Alarmer interface {
	// Alarm runs when the object's alarm is due, as one event like any
	// other (it waits for the gate, may yield, and its writes commit).
	// Returning an error (or panicking) schedules a retry; writes made by
	// the failed attempt are kept, except those a panic rolls back.
	Alarm(ctx context.Context, info AlarmInfo) error
}

// AlarmInfo describes the alarm being run.
type AlarmInfo struct {
	// ScheduledTime is when the alarm was due.
	ScheduledTime time.Time
	// RetryCount is how many times this alarm already failed.
	RetryCount int
	// IsRetry is RetryCount > 0.
	IsRetry bool
}

// SetAlarm schedules the object's alarm at at (replacing any alarm). The
// alarm joins the turn's transaction: it is installed when the turn
// commits. Each SetAlarm resets the retry counters and draws a new random
// generation, so a handler that re-arms its own alarm is never mistaken
// for the alarm that fired.
//
// An object without an Alarm method (not an Alarmer) cannot take an
// alarm: SetAlarm returns a *NoAlarmHandlerError and changes nothing.
func (s *State) SetAlarm(ctx context.Context, at time.Time) error {
	inst := s.inst
	unlock, err := inst.lockWrite(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if !inst.handlesAlarms() {
		return &NoAlarmHandlerError{Class: inst.cls.name}
	}
	if inst.obj == nil {
		inst.alarm.setBeforeObject = true // checked once the constructor returns the object
	}
	gen := rand.Int64()
	if _, err := inst.db.conn.Exec(ctx, sqlAlarmSet, inst.key, at.UnixMilli(), gen); err != nil {
		return fmt.Errorf("cell: set alarm: %w", err)
	}
	inst.alarm.markChanged()
	return nil
}

// handlesAlarms reports whether the object can run an alarm. While the
// constructor of a class registered with an interface type runs, the
// object is not known yet: activate checks it once it is.
func (inst *instance) handlesAlarms() bool {
	switch inst.cls.alarms {
	case alarmsYes:
		return true
	case alarmsNo:
		return false
	}
	if inst.obj == nil {
		return true
	}
	_, ok := inst.obj.(Alarmer)
	return ok
}

// GetAlarm returns the alarm's due time, if one is set. While the alarm's
// handler runs, the alarm that fired reads as not set, unless something
// set a new one.
func (s *State) GetAlarm(ctx context.Context) (time.Time, bool, error) {
	inst := s.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	defer unlock()
	row, err := inst.readAlarmLocked(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	if row = inst.alarm.visible(row); row == nil {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(row.AtMs), true, nil
}

// DeleteAlarm removes the alarm, if any.
func (s *State) DeleteAlarm(ctx context.Context) error {
	inst := s.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if inst.db.virgin {
		inst.alarm.markChanged()
		return nil
	}
	if _, err := inst.db.conn.Exec(ctx, sqlAlarmDelete, inst.key); err != nil {
		return fmt.Errorf("cell: delete alarm: %w", err)
	}
	inst.alarm.markChanged()
	return nil
}

// readAlarmLocked reads the cell's _cf_ALARM row (nil if none).
func (inst *instance) readAlarmLocked(ctx context.Context) (*alarmRow, error) {
	if inst.db.virgin {
		return nil, nil // nothing stored yet
	}
	return queryAlarmRow(ctx, inst.db.conn, sqlAlarmGet, inst.key)
}

func queryAlarmRow(ctx context.Context, conn driver.Conn, q, key string) (*alarmRow, error) {
	rows, err := conn.Query(ctx, q, key)
	if err != nil {
		return nil, fmt.Errorf("read alarm: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var r alarmRow
	var at, retry *int64
	if err := driver.ScanValues(rows.Values(), &at, &retry, &r.Counted, &r.Generation); err != nil {
		return nil, fmt.Errorf("read alarm: %w", err)
	}
	if at == nil {
		return nil, rows.Err() // a row without a time is no alarm
	}
	r.AtMs = *at
	if retry != nil {
		r.Retry = *retry
	}
	return &r, rows.Err()
}

// alarmTurn is the body of an alarm event: run the handler if the stored
// alarm is due, then record the outcome in the same turn. A non-nil error
// is an internal failure (storage, a reset), retried without counting.
func (inst *instance) alarmTurn(ctx context.Context, ev *event, obj any) error {
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return err
	}
	row, err := inst.readAlarmLocked(ctx)
	inst.alarm.markChanged() // whatever happens, reschedule from the row
	unlock()
	if err != nil {
		return err
	}
	now := inst.rt.clk.Now()
	if row == nil || row.AtMs > now.UnixMilli() {
		return nil
	}
	h, ok := obj.(Alarmer)
	if !ok {
		inst.rt.logger.Warn("cell alarm fired for an object without an Alarm method; dropping it", "cell", inst.key)
		return inst.settleAlarm(ctx, row, nil)
	}
	inst.mu.Lock()
	inst.alarm.fire(row)
	inst.mu.Unlock()
	info := AlarmInfo{ScheduledTime: time.UnixMilli(row.AtMs), RetryCount: int(row.Retry), IsRetry: row.Retry > 0}
	var herr error
	p := protect(func() { herr = h.Alarm(ctx, info) })
	inst.mu.Lock()
	inst.alarm.fired()
	inst.mu.Unlock()
	if !ev.isHolding() {
		if err := inst.g.err(); err != nil {
			return err
		}
		return fmt.Errorf("cell: alarm handler lost its turn: %v", ctx.Err())
	}
	if p != nil {
		inst.logPanic("cell alarm handler panicked", p)
		inst.rollbackTurn()
		herr = p
		ev.breakAfter = &BrokenObjectError{Key: inst.key, Reason: "the alarm handler panicked: " + fmt.Sprint(p.Value), Err: p}
	}
	if herr != nil {
		inst.rt.logger.Warn("cell alarm failed", "cell", inst.key, "retry", row.Retry, "err", herr)
	}
	return inst.settleAlarm(ctx, row, herr)
}

// settleAlarm records a run's outcome in the _cf_ALARM row.
func (inst *instance) settleAlarm(ctx context.Context, fired *alarmRow, herr error) error {
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	inst.alarm.markChanged()
	cur, err := inst.readAlarmLocked(ctx)
	if err != nil || inst.db.virgin {
		return err
	}
	if herr == nil {
		if alarmAfterSuccess(fired, cur) {
			_, err = inst.db.conn.Exec(ctx, sqlAlarmDeleteFired, inst.key, fired.AtMs, fired.Generation)
		}
		return err
	}
	next, update, drop := alarmAfterFailure(fired, cur, inst.rt.clk.Now().UnixMilli(), true)
	switch {
	case drop:
		inst.rt.logger.Warn("cell alarm dropped after repeated failures", "cell", inst.key, "failures", alarmMaxCounted)
		_, err = inst.db.conn.Exec(ctx, sqlAlarmDeleteFired, inst.key, fired.AtMs, fired.Generation)
	case update:
		_, err = inst.db.conn.Exec(ctx, sqlAlarmRetry, next.AtMs, next.Retry, next.Counted, inst.key, fired.AtMs, fired.Generation)
	}
	return err
}

// alarmScheduler keeps one timer per cell with an alarm, across evictions:
// when it fires, the cell is activated if needed and the stored alarm
// decides whether anything runs.
type alarmScheduler struct {
	rt      *Runtime
	mu      sync.Mutex
	stopped bool
	entries map[string]*alarmEntry

	// inflight counts the runs whose timer fired and that have not
	// finished (Runtime.AlarmsInFlight).
	inflight atomic.Int64
}

type alarmEntry struct {
	cls     *class
	id      ID
	at      time.Time // due time of the stored alarm
	has     bool
	timer   clock.Timer
	running bool
	// refire is set when the timer fired during a run; the run's end fires
	// again so the stored alarm is looked at once more.
	refire bool
	// internal counts consecutive runs that failed inside the runtime
	// (storage, reset): they retry on the backoff without counting.
	internal int64
}

func newAlarmScheduler(rt *Runtime) *alarmScheduler {
	return &alarmScheduler{rt: rt, entries: map[string]*alarmEntry{}}
}

// set records a cell's committed alarm (nil: none) and arms its timer.
func (s *alarmScheduler) set(cls *class, id ID, row *alarmRow) {
	key := CellKey(cls.name, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		if row == nil {
			return
		}
		e = &alarmEntry{cls: cls, id: id}
		s.entries[key] = e
	}
	if row == nil {
		e.has = false
	} else {
		e.has, e.at = true, time.UnixMilli(row.AtMs)
	}
	s.armLocked(key, e, e.at, e.has)
}

// dueWithin reports whether the cell has a stored alarm due before now+d
// (or running now).
func (s *alarmScheduler) dueWithin(key string, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	return e != nil && (e.running || (e.has && e.at.Before(s.rt.clk.Now().Add(d))))
}

func (s *alarmScheduler) armLocked(key string, e *alarmEntry, at time.Time, has bool) {
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if s.stopped {
		return
	}
	if !has {
		if !e.running {
			delete(s.entries, key)
		}
		return
	}
	d := max(at.Sub(s.rt.clk.Now()), 0)
	e.timer = s.rt.clk.AfterFunc(d, func() { s.goFire(key) })
}

// goFire runs fire on its own goroutine, counted in flight from now.
func (s *alarmScheduler) goFire(key string) {
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Add(-1)
		s.fire(key)
	}()
}

// fire runs a cell's due alarm; one run at a time per cell.
func (s *alarmScheduler) fire(key string) {
	s.mu.Lock()
	e := s.entries[key]
	if e == nil || s.stopped {
		s.mu.Unlock()
		return
	}
	if e.running {
		e.refire = true
		s.mu.Unlock()
		return
	}
	e.running = true
	e.refire = false
	s.mu.Unlock()

	err := s.rt.dispatch(s.rt.bg, e.cls, e.id, func(ctx context.Context, obj any) error {
		ev := eventFrom(ctx)
		return ev.inst.alarmTurn(ctx, ev, obj)
	})

	s.mu.Lock()
	defer s.mu.Unlock()
	e.running = false
	if s.stopped || errors.Is(err, ErrClosed) {
		return
	}
	if err != nil {
		// An internal failure: retry on the backoff without counting.
		delay := alarmRetryDelay(e.internal)
		e.internal++
		s.rt.warnUnlessRoutine("cell alarm could not run; retrying", err, "cell", key, "in", delay)
		s.armLocked(key, e, s.rt.clk.Now().Add(delay), true)
		return
	}
	e.internal = 0
	if e.refire {
		e.refire = false
		s.goFire(key)
		return
	}
	if !e.has && e.timer == nil {
		delete(s.entries, key)
	}
}

// stopAll cancels every timer (Close).
func (s *alarmScheduler) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, e := range s.entries {
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
	}
}

// scanClass schedules the alarms stored in the local databases of a class
// (those of the cells keep accepts; all when keep is nil), so alarms
// survive restarts. Unreadable files are logged and skipped; it stops when
// ctx ends.
func (s *alarmScheduler) scanClass(ctx context.Context, cls *class, keep func(cellKey string) bool) {
	rt := s.rt
	dir := filepath.Join(rt.opts.DataDir, cls.name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			rt.logger.Warn("cell alarm scan", "dir", dir, "err", err)
		}
		return
	}
	for _, de := range ents {
		if ctx.Err() != nil {
			return
		}
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, dbSuffix) {
			continue
		}
		id, err := IDFromString(rt.opts.ScriptName, cls.name, strings.TrimSuffix(name, dbSuffix))
		if err != nil {
			rt.logger.Warn("cell alarm scan: skipping a database whose name is not an id of this class", "file", name, "err", err)
			continue
		}
		if keep != nil && !keep(CellKey(cls.name, id)) {
			continue
		}
		row, err := readStoredAlarm(ctx, rt.opts.Driver, filepath.Join(dir, name), CellKey(cls.name, id))
		if err != nil {
			rt.logger.Warn("cell alarm scan", "file", name, "err", err)
			continue
		}
		if row != nil {
			s.set(cls, id, row)
		}
	}
}

func readStoredAlarm(ctx context.Context, drv driver.Driver, path, key string) (*alarmRow, error) {
	conn, err := drv.Open(ctx, driver.Config{Path: path})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, sqlHasAlarmTable)
	if err != nil {
		return nil, err
	}
	var n int64
	if rows.Next() {
		err = driver.ScanValues(rows.Values(), &n)
	}
	rows.Close()
	if err != nil || n == 0 {
		return nil, err
	}
	return queryAlarmRow(ctx, conn, sqlAlarmScan, key)
}
