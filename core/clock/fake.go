package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to. Timers fire, in deadline
// order, during Advance or Set; AfterFunc callbacks run synchronously inside
// that call, so a test sees their effects as soon as Advance returns.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clock: f, ch: make(chan time.Time, 1)}
	f.schedule(t, d)
	return t
}

func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{clock: f, fn: fn}
	f.schedule(t, d)
	return t
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.Set(target)
}

// Set moves the clock to t (never backwards), firing due timers in order.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		next := f.nextDue(t)
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if next.when.After(f.now) {
			f.now = next.when
		}
		f.remove(next)
		now := f.now
		f.mu.Unlock()
		next.fire(now)
	}
}

// Pending is the number of timers that have not fired or been stopped.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NextDeadline is when the earliest pending timer fires, and whether one is.
func (f *Fake) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return time.Time{}, false
	}
	f.sortTimers()
	return f.timers[0].when, true
}

func (f *Fake) schedule(t *fakeTimer, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t.when = f.now.Add(d)
	t.seq = f.seq
	f.timers = append(f.timers, t)
}

func (f *Fake) sortTimers() {
	sort.Slice(f.timers, func(i, j int) bool {
		a, b := f.timers[i], f.timers[j]
		if !a.when.Equal(b.when) {
			return a.when.Before(b.when)
		}
		return a.seq < b.seq
	})
}

func (f *Fake) nextDue(limit time.Time) *fakeTimer {
	if len(f.timers) == 0 {
		return nil
	}
	f.sortTimers()
	if f.timers[0].when.After(limit) {
		return nil
	}
	return f.timers[0]
}

func (f *Fake) remove(t *fakeTimer) bool {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	seq   uint64
	ch    chan time.Time
	fn    func()
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.remove(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	f := t.clock
	f.mu.Lock()
	active := f.remove(t)
	f.seq++
	t.when = f.now.Add(d)
	t.seq = f.seq
	f.timers = append(f.timers, t)
	f.mu.Unlock()
	return active
}

func (t *fakeTimer) fire(now time.Time) {
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}
