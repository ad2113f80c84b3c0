package celltest

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
)

func alarmCases() []caseDef {
	return []caseDef{
		{"alarm/timeline", caseAlarmTimeline},
		{"alarm/rearm-wins", caseAlarmRearm},
		{"alarm/survives-restart", caseAlarmRestart},
		{"alarm/learn-after-takeover", caseAlarmLearn},
		{"alarm/internal-failure-uncounted", caseAlarmInternalFailure},
		{"alarm/one-at-a-time", caseAlarmOneAtATime},
		{"alarm/set-resets-retries", caseAlarmSetResetsRetries},
		{"alarm/needs-handler", caseAlarmNeedsHandler},
		{"alarm/stored-row-decides", caseAlarmStoredRowDecides},
		{"alarm/internal-backoff", caseAlarmInternalBackoff},
		{"alarm/residency", caseAlarmResidency},
		{"alarm/panic", caseAlarmPanic},
	}
}

// alarmObj runs the case's alarm behaviour and reports every run.
type alarmObj struct {
	st   *cell.State
	runs chan alarmRun
	do   func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error
}

type alarmRun struct {
	info     cell.AlarmInfo
	getAlarm bool // what GetAlarm said inside the handler
	err      error
}

func (o *alarmObj) Alarm(ctx context.Context, info cell.AlarmInfo) error {
	_, set, gerr := o.st.GetAlarm(ctx)
	if gerr != nil {
		return gerr
	}
	if _, err := o.st.SQL().Exec(ctx, "INSERT INTO attempts(at) VALUES(?)", info.RetryCount); err != nil {
		return err
	}
	err := o.do(ctx, o, info)
	o.runs <- alarmRun{info, set, err}
	return err
}

func (c *checkT) alarmClass(rt *cell.Runtime, name string, do func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error) (*cell.Namespace[*alarmObj], chan alarmRun) {
	runs := make(chan alarmRun, 16)
	ns, err := cell.Register(rt, name, func(ctx context.Context, st *cell.State) (*alarmObj, error) {
		_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS attempts(at INTEGER)")
		return &alarmObj{st: st, runs: runs, do: do}, err
	})
	if err != nil {
		c.fatalf("Register: %v", err)
	}
	return ns, runs
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// expectDeadline checks the fake clock's next timer.
func (c *checkT) expectDeadline(clk *clock.Fake, want time.Time, what string) {
	got, ok := clk.NextDeadline()
	if !ok || !got.Equal(want) {
		c.errorf("%s: next timer at %v (set %v), want %v", what, got.Sub(epoch), ok, want.Sub(epoch))
	}
}

func (c *checkT) expectNoTimer(clk *clock.Fake, what string) {
	if got, ok := clk.NextDeadline(); ok {
		c.errorf("%s: a timer is still set for %v", what, got.Sub(epoch))
	}
}

func alarmCall[R any](c *checkT, ns *cell.Namespace[*alarmObj], what string, fn func(ctx context.Context, o *alarmObj) (R, error)) R {
	v, err := cell.Call(c.ctx, ns.Get(ns.IDFromName("a")), fn)
	if err != nil {
		c.fatalf("%s: %v", what, err)
	}
	return v
}

// The whole timeline: success deletes the alarm; failures retry at
// now + 2 s << min(retry, 6) with counters, keep their writes, and the
// alarm is dropped after 6 counted failures.
func caseAlarmTimeline(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	var fail atomic.Bool
	ns, runs := c.alarmClass(rt, "Alarm", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error {
		if fail.Load() {
			return errors.New("alarm failed")
		}
		return nil
	})
	get := func(what string) (time.Time, bool) {
		type r struct {
			t  time.Time
			ok bool
		}
		v := alarmCall(c, ns, what, func(ctx context.Context, o *alarmObj) (r, error) {
			t, ok, err := o.st.GetAlarm(ctx)
			return r{t, ok}, err
		})
		return v.t, v.ok
	}
	set := func(at time.Time) {
		alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.SetAlarm(ctx, at) })
	}

	// Success.
	set(epoch.Add(10 * time.Second))
	if at, ok := get("GetAlarm"); !ok || !at.Equal(epoch.Add(10*time.Second)) {
		c.errorf("GetAlarm = %v, %v; want +10s", at, ok)
	}
	c.expectDeadline(clk, epoch.Add(10*time.Second), "after SetAlarm")
	clk.Advance(9 * time.Second)
	select {
	case <-runs:
		c.errorf("the alarm ran before it was due")
	default:
	}
	clk.Advance(time.Second)
	r := wait(c, runs, "the alarm at +10s")
	if r.getAlarm || r.info.RetryCount != 0 || r.info.IsRetry || !r.info.ScheduledTime.Equal(epoch.Add(10*time.Second)) {
		c.errorf("first run: GetAlarm set=%v, info %+v; want not set, retry 0, scheduled +10s", r.getAlarm, r.info)
	}
	if _, ok := get("GetAlarm after success"); ok {
		c.errorf("the alarm is still set after a successful run")
	}
	c.expectNoTimer(clk, "after success")

	// Failures: 6 counted failures, then dropped.
	fail.Store(true)
	start := clk.Now()
	set(start.Add(time.Second))
	clk.Advance(time.Second)
	for i := 0; i < 6; i++ {
		r := wait(c, runs, "a failing run")
		if r.info.RetryCount != i || r.info.IsRetry != (i > 0) {
			c.errorf("run %d: info %+v, want RetryCount %d", i+1, r.info, i)
		}
		at, ok := get("GetAlarm after a failure")
		if i == 5 {
			if ok {
				c.errorf("the alarm is still set (%v) after 6 counted failures", at.Sub(epoch))
			}
			c.expectNoTimer(clk, "after the alarm was dropped")
			break
		}
		want := clk.Now().Add(2 * time.Second << i)
		if !ok || !at.Equal(want) {
			c.errorf("after failure %d the alarm is at %v (set %v), want now + %v", i+1, at.Sub(epoch), ok, 2*time.Second<<i)
		}
		c.expectDeadline(clk, want, "retry timer")
		clk.Set(want)
	}
	n := alarmCall(c, ns, "count attempts", func(ctx context.Context, o *alarmObj) (int64, error) {
		var n int64
		err := o.st.SQL().QueryRow(ctx, "SELECT count(*) FROM attempts").Scan(&n)
		return n, err
	})
	if n != 7 {
		c.errorf("%d attempts recorded, want 7 (writes of failed attempts are kept)", n)
	}
}

// A handler's own SetAlarm wins over the deletion after success and over
// the retry after failure.
func caseAlarmRearm(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	var fail atomic.Bool
	ns, runs := c.alarmClass(rt, "Rearm", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error {
		if err := o.st.SetAlarm(ctx, info.ScheduledTime.Add(time.Minute)); err != nil {
			return err
		}
		if _, ok, _ := o.st.GetAlarm(ctx); !ok {
			return errors.New("GetAlarm does not see the handler's own SetAlarm")
		}
		if fail.Load() {
			return errors.New("failed after re-arming")
		}
		return nil
	})
	alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, epoch.Add(time.Second))
	})
	clk.Advance(time.Second)
	if r := wait(c, runs, "the alarm"); r.err != nil {
		c.errorf("the alarm handler: %v", r.err)
	}
	alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
	c.expectDeadline(clk, epoch.Add(61*time.Second), "after a successful run that re-armed")
	fail.Store(true)
	clk.Set(epoch.Add(61 * time.Second))
	wait(c, runs, "the re-armed alarm")
	alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
	c.expectDeadline(clk, epoch.Add(121*time.Second), "after a failed run that re-armed (the re-arm wins over the retry)")
}

// A stored alarm fires after the runtime restarts.
func caseAlarmRestart(c *checkT) {
	clk := clock.NewFake(epoch)
	dir := filepath.Join(c.dir, "restart")
	rt := c.runtime(rtConfig{clock: clk, dir: dir})
	ns, _ := c.alarmClass(rt, "Restart", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, epoch.Add(time.Hour))
	})
	if err := rt.Close(c.ctx); err != nil {
		c.fatalf("Close: %v", err)
	}
	c.expectNoTimer(clk, "after Close")
	rt2 := c.runtime(rtConfig{clock: clk, dir: dir})
	_, runs := c.alarmClass(rt2, "Restart", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	c.expectDeadline(clk, epoch.Add(time.Hour), "after the restart")
	clk.Advance(time.Hour)
	if r := wait(c, runs, "the alarm after a restart"); r.err != nil || !r.info.ScheduledTime.Equal(epoch.Add(time.Hour)) {
		c.errorf("alarm after restart: %+v", r)
	}
}

// An alarm that cannot run because the runtime failed (here: the cell's
// lease could not be taken) retries on the backoff without counting: the
// handler later sees RetryCount 0.
func caseAlarmInternalFailure(c *checkT) {
	clk := clock.NewFake(epoch)
	ls := newTestLease()
	rt := c.runtime(rtConfig{clock: clk, lease: ls})
	ns, runs := c.alarmClass(rt, "Internal", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	key := ns.Key(ns.IDFromName("a"))
	alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, epoch.Add(10*time.Second))
	})
	rt.EvictAll()
	c.eventually("the cell to leave memory after EvictAll", func() bool { return !slices.Contains(rt.ActiveCells(), key) })
	ls.fail(1, errors.New("injected: lease unavailable"))
	clk.Advance(10 * time.Second)
	want := epoch.Add(12 * time.Second)
	c.eventually("an uncounted retry 2s after the failed activation", func() bool {
		at, ok := clk.NextDeadline()
		return ok && at.Equal(want)
	})
	clk.Set(want)
	r := wait(c, runs, "the alarm after the internal failure")
	if r.err != nil || r.info.RetryCount != 0 || r.info.IsRetry {
		c.errorf("after an internal failure the handler saw %+v (err %v), want RetryCount 0: internal failures do not count", r.info, r.err)
	}
}

// One Alarm runs at a time per object: an alarm that falls due while the
// handler is yielded waits for it to finish.
func caseAlarmOneAtATime(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	var running, most atomic.Int32
	var n atomic.Int32
	inFirst, release := make(chan struct{}), make(chan struct{})
	ns, runs := c.alarmClass(rt, "Single", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error {
		r := running.Add(1)
		defer running.Add(-1)
		if r > most.Load() {
			most.Store(r)
		}
		if n.Add(1) == 1 {
			close(inFirst)
			_, err := cell.Await(ctx, func(ctx context.Context) (int, error) { <-release; return 0, nil })
			return err
		}
		return nil
	})
	alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, epoch.Add(time.Second))
	})
	clk.Advance(time.Second)
	wait(c, inFirst, "the first alarm")
	// While the first handler is yielded, another event re-arms the alarm
	// for now, and it falls due.
	alarmCall(c, ns, "re-arm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, clk.Now())
	})
	clk.Advance(time.Millisecond)
	select {
	case r := <-runs:
		c.errorf("an alarm run finished while the first was still running: %+v", r)
	case <-time.After(settle):
	}
	close(release)
	wait(c, runs, "the first alarm to finish")
	wait(c, runs, "the re-armed alarm after the first finished")
	if m := most.Load(); m != 1 {
		c.errorf("%d Alarm handlers ran at once, want 1", m)
	}
}

// SetAlarm starts a fresh alarm: it resets both retry counters, so the
// next run sees RetryCount 0 and the alarm gets its full six counted
// failures again.
func caseAlarmSetResetsRetries(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	ns, runs := c.alarmClass(rt, "Reset", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error {
		return errors.New("alarm failed")
	})
	set := func(at time.Time) {
		alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.SetAlarm(ctx, at) })
	}
	// Five counted failures: one short of the drop.
	set(epoch.Add(time.Second))
	clk.Advance(time.Second)
	for i := 0; i < 5; i++ {
		if r := wait(c, runs, "a failing run"); r.info.RetryCount != i {
			c.fatalf("run %d saw RetryCount %d, want %d", i+1, r.info.RetryCount, i)
		}
		alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
		at, ok := clk.NextDeadline()
		if !ok {
			c.fatalf("no retry is scheduled after failure %d", i+1)
		}
		if i < 4 {
			clk.Set(at)
		}
	}
	// A new SetAlarm: the counters start again.
	fresh := clk.Now().Add(time.Minute)
	set(fresh)
	c.expectDeadline(clk, fresh, "after a new SetAlarm")
	clk.Set(fresh)
	r := wait(c, runs, "the newly set alarm")
	if r.info.RetryCount != 0 || r.info.IsRetry || !r.info.ScheduledTime.Equal(fresh) {
		c.errorf("the run after a new SetAlarm saw %+v, want RetryCount 0, not a retry, scheduled at +%v (SetAlarm resets the retry counter)", r.info, fresh.Sub(epoch))
	}
	alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
	if _, ok := clk.NextDeadline(); !ok {
		c.errorf("the alarm was dropped after one failure following a new SetAlarm: its counted failures were not reset")
	}
}

// noAlarmObj has no Alarm method.
type noAlarmObj struct{ st *cell.State }

// alarmAny is an object registered under an interface type that handles
// alarms.
type alarmAny struct{ st *cell.State }

func (alarmAny) Alarm(ctx context.Context, info cell.AlarmInfo) error { return nil }

// SetAlarm on an object without an Alarm method is refused with a
// *cell.NoAlarmHandlerError and changes nothing; the check follows the
// object when the class is registered under an interface type.
func caseAlarmNeedsHandler(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	ns, err := cell.Register(rt, "NoAlarm", func(ctx context.Context, st *cell.State) (*noAlarmObj, error) {
		return &noAlarmObj{st: st}, nil
	})
	if err != nil {
		c.fatalf("Register: %v", err)
	}
	id := ns.IDFromName("a")
	type got struct {
		set error
		has bool
	}
	g, err := cell.Call(c.ctx, ns.Get(id), func(ctx context.Context, o *noAlarmObj) (got, error) {
		serr := o.st.SetAlarm(ctx, epoch.Add(time.Minute))
		_, has, err := o.st.GetAlarm(ctx)
		return got{serr, has}, err
	})
	if err != nil {
		c.fatalf("call: %v", err)
	}
	var ne *cell.NoAlarmHandlerError
	if !errors.As(g.set, &ne) || !strings.Contains(g.set.Error(), "class NoAlarm has no Alarm method") {
		c.errorf("SetAlarm on an object without an Alarm method returned %v, want a *cell.NoAlarmHandlerError naming the class", g.set)
	}
	if g.has {
		c.errorf("a refused SetAlarm left an alarm set")
	}
	c.expectNoTimer(clk, "after a refused SetAlarm")

	// Registered under an interface type: decided by the object, also in
	// its constructor.
	var ctorErr atomic.Value
	nsAny, err := cell.Register(rt, "AnyNoAlarm", func(ctx context.Context, st *cell.State) (any, error) {
		if err := st.SetAlarm(ctx, epoch.Add(time.Minute)); err != nil {
			ctorErr.Store(err)
		}
		return &noAlarmObj{st: st}, nil
	})
	if err != nil {
		c.fatalf("Register: %v", err)
	}
	_, err = cell.Call(c.ctx, nsAny.Get(nsAny.IDFromName("a")), func(ctx context.Context, o any) (int, error) { return 0, nil })
	if !errors.As(err, &ne) {
		c.errorf("a constructor that arms an alarm for an object without an Alarm method: the call returned %v (SetAlarm said %v), want a *cell.NoAlarmHandlerError", err, ctorErr.Load())
	}
	c.expectNoTimer(clk, "after a refused SetAlarm in a constructor")
	nsOK, err := cell.Register(rt, "AnyAlarm", func(ctx context.Context, st *cell.State) (any, error) {
		return alarmAny{st: st}, st.SetAlarm(ctx, epoch.Add(time.Minute))
	})
	if err != nil {
		c.fatalf("Register: %v", err)
	}
	if _, err := cell.Call(c.ctx, nsOK.Get(nsOK.IDFromName("a")), func(ctx context.Context, o any) (int, error) {
		return 0, o.(alarmAny).st.SetAlarm(ctx, epoch.Add(2*time.Minute))
	}); err != nil {
		c.errorf("SetAlarm on an object with an Alarm method registered under an interface type: %v", err)
	}
	c.expectDeadline(clk, epoch.Add(2*time.Minute), "after SetAlarm on an object with an Alarm method")
}

// evictCell drops the cell from memory (as a crash would), leaving its
// alarm timer running.
func (c *checkT) evictCell(rt *cell.Runtime, key string) {
	rt.EvictAll()
	c.eventually("the cell to leave memory after EvictAll", func() bool { return !slices.Contains(rt.ActiveCells(), key) })
}

// When the timer fires, the stored alarm decides: nothing runs if the row
// is gone or not yet due, and a row moved later is scheduled anew.
func caseAlarmStoredRowDecides(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	ns, runs := c.alarmClass(rt, "Stored", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	key := ns.Key(ns.IDFromName("a"))
	set := func(at time.Time) {
		alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.SetAlarm(ctx, at) })
	}
	path, err := cell.DatabasePath(rt.DataDir(), key)
	if err != nil {
		c.fatalf("DatabasePath: %v", err)
	}
	// raw writes the evicted cell's database directly, once the evicted
	// instance has let go of it (it leaves ActiveCells first).
	raw := func(q string, args ...any) {
		c.eventually("a direct write to the evicted cell's database: "+q, func() bool {
			conn, err := c.h.Driver.Open(c.ctx, driverConfig(path))
			if err == nil {
				_, err = conn.Exec(c.ctx, q, args...)
				conn.Close()
			}
			return err == nil
		})
	}

	// The row is gone when the timer fires.
	set(epoch.Add(10 * time.Second))
	c.evictCell(rt, key)
	raw("DELETE FROM _cf_ALARM")
	clk.Advance(10 * time.Second)
	alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
	select {
	case r := <-runs:
		c.errorf("the handler ran for an alarm whose row was deleted: %+v", r)
	default:
	}
	c.expectNoTimer(clk, "after a fire that found no alarm")

	// The row was moved later: nothing runs now, the timer follows the row.
	set(clk.Now().Add(10 * time.Second))
	c.evictCell(rt, key)
	later := clk.Now().Add(time.Hour)
	raw("UPDATE _cf_ALARM SET at_ms = ?", later.UnixMilli())
	clk.Advance(10 * time.Second)
	c.eventually("the timer to follow the stored alarm", func() bool {
		at, ok := clk.NextDeadline()
		return ok && at.Equal(later)
	})
	select {
	case r := <-runs:
		c.errorf("the handler ran for an alarm whose row is not due: %+v", r)
	default:
	}
	clk.Set(later)
	if r := wait(c, runs, "the moved alarm"); !r.info.ScheduledTime.Equal(later) {
		c.errorf("the moved alarm ran as %+v, want scheduled at +%v", r.info, later.Sub(epoch))
	}
}

// Runs that fail inside the runtime retry on the backoff (2 s, 4 s, ...)
// without counting; a run that gets through starts the backoff again.
func caseAlarmInternalBackoff(c *checkT) {
	clk := clock.NewFake(epoch)
	ls := newTestLease()
	rt := c.runtime(rtConfig{clock: clk, lease: ls})
	ns, runs := c.alarmClass(rt, "Backoff", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	key := ns.Key(ns.IDFromName("a"))
	expectRetry := func(after time.Duration, what string) {
		want := clk.Now().Add(after)
		c.eventually(what, func() bool {
			at, ok := clk.NextDeadline()
			return ok && at.Equal(want)
		})
		clk.Set(want)
	}
	for round := 0; round < 2; round++ {
		at := clk.Now().Add(10 * time.Second)
		alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.SetAlarm(ctx, at) })
		c.evictCell(rt, key)
		ls.fail(2, errors.New("injected: lease unavailable"))
		clk.Set(at)
		expectRetry(2*time.Second, "a retry 2s after the first failed run")
		expectRetry(4*time.Second, "a retry 4s after the second failed run (the backoff grows)")
		if r := wait(c, runs, "the alarm after two internal failures"); r.info.RetryCount != 0 {
			c.errorf("round %d: after internal failures the handler saw %+v, want RetryCount 0", round+1, r.info)
		}
		alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
	}
}

// An idle object whose alarm is due within the residency (an hour by
// default) stays in memory, its idle countdown started again; one whose
// alarm is further off is evicted.
func caseAlarmResidency(c *checkT) {
	clk := clock.NewFake(epoch)
	idle := 10 * time.Second
	rt := c.runtime(rtConfig{clock: clk, idle: idle})
	ns, _ := c.alarmClass(rt, "Resident", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	key := ns.Key(ns.IDFromName("a"))
	set := func(at time.Time) {
		alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.SetAlarm(ctx, at) })
	}
	set(epoch.Add(cell.DefaultAlarmResidency - time.Second))
	clk.Advance(idle)
	c.eventually("the idle countdown to start again", func() bool {
		at, ok := clk.NextDeadline()
		return ok && at.Equal(epoch.Add(2*idle))
	})
	if !slices.Contains(rt.ActiveCells(), key) {
		c.errorf("an idle object whose alarm is due within the residency was evicted")
	}
	set(clk.Now().Add(2 * cell.DefaultAlarmResidency))
	clk.Advance(idle)
	c.eventually("the idle object with a distant alarm to be evicted", func() bool { return !slices.Contains(rt.ActiveCells(), key) })
}

// An alarm handler that panics is a counted failure: its writes are rolled
// back, the failure is recorded and retried on the backoff, and the object
// is reset.
func caseAlarmPanic(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	var built atomic.Int32
	var panicking atomic.Bool
	panicking.Store(true)
	runs := make(chan alarmRun, 16)
	ns, err := cell.Register(rt, "Panic", func(ctx context.Context, st *cell.State) (*alarmObj, error) {
		built.Add(1)
		_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS attempts(at INTEGER)")
		return &alarmObj{st: st, runs: runs, do: func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error {
			if panicking.Load() {
				runs <- alarmRun{info: info}
				panic("alarm handler panicked")
			}
			return nil
		}}, err
	})
	if err != nil {
		c.fatalf("Register: %v", err)
	}
	alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, epoch.Add(time.Second))
	})
	clk.Advance(time.Second)
	wait(c, runs, "the panicking alarm")
	want := clk.Now().Add(2 * time.Second)
	c.eventually("the panic to be recorded as a failure, retried in 2s", func() bool {
		at, ok := clk.NextDeadline()
		return ok && at.Equal(want)
	})
	c.eventually("the object to be reset", func() bool { return !slices.Contains(rt.ActiveCells(), ns.Key(ns.IDFromName("a"))) })
	panicking.Store(false)
	// The reset itself also retries the run on the internal backoff:
	// follow the timers until the retry runs.
	var r alarmRun
	c.eventually("the retry after the panic", func() bool {
		select {
		case r = <-runs:
			return true
		default:
		}
		if at, ok := clk.NextDeadline(); ok {
			clk.Set(at)
		}
		return false
	})
	if r.info.RetryCount != 1 || !r.info.IsRetry {
		c.errorf("the run after a panic saw %+v, want RetryCount 1 (a panic is a counted failure)", r.info)
	}
	n := alarmCall(c, ns, "count attempts", func(ctx context.Context, o *alarmObj) (int64, error) {
		var n int64
		err := o.st.SQL().QueryRow(ctx, "SELECT count(*) FROM attempts").Scan(&n)
		return n, err
	})
	if n != 1 {
		c.errorf("%d attempts recorded, want 1 (the panicking run's write is rolled back)", n)
	}
	if b := built.Load(); b != 2 {
		c.errorf("the object was constructed %d times, want 2 (a panic resets it)", b)
	}
}
