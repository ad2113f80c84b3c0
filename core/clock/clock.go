// Package clock is the injectable time source of CellB. Every protocol timer
// (lease renewal, self-fencing deadlines, alarms, idle eviction) reads time
// through a Clock, so tests drive it with a Fake and replay a schedule
// exactly.
package clock

import "time"

// Clock tells time and makes timers.
type Clock interface {
	// Now is the wall-clock time. Real clocks carry a monotonic reading too,
	// so Sub between two Now values is safe for durations.
	Now() time.Time
	// NewTimer fires once, after d, on Timer.C.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer that CellB uses.
type Timer interface {
	// C fires once when the timer expires; it is nil for AfterFunc timers.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset makes the timer fire after d; it reports whether it was active.
	Reset(d time.Duration) bool
}

// Real is the system clock.
type Real struct{}

// NewReal returns the system clock.
func NewReal() Clock { return Real{} }

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Or returns c, or the real clock when c is nil: the default for options.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// UnixMilli is t as celld's *_ms fields write it.
func UnixMilli(c Clock) int64 { return c.Now().UnixMilli() }
