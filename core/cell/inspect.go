package cell

import (
	"context"
	"time"
)

// Now is the runtime's clock (Options.Clock) read now. Objects that read
// time through it (an expiry, a deadline) can be tested with a fake clock
// (core/cellbtest) as their alarms are.
func (s *State) Now() time.Time { return s.inst.rt.clk.Now() }

// Inspect runs fn in one turn of the object stub names, with that
// object's State: a read (or write) of the cell's storage through its
// own gate, for tests and tools that do not know the object's methods.
// Like Call, it activates the object if need be, and its reply waits for
// what the turn committed.
func Inspect[O any](ctx context.Context, s *Stub[O], fn func(ctx context.Context, st *State) error) error {
	_, err := Call(ctx, s, func(ctx context.Context, _ O) (struct{}, error) {
		return struct{}{}, fn(ctx, eventFrom(ctx).inst.st)
	})
	return err
}

// AlarmsInFlight is the number of alarm runs started and not finished: a
// timer fired and its run (the handler, the commit, the reschedule) has
// not returned. A test kit driving a fake clock waits for it to reach
// zero after each step (core/cellbtest).
func (rt *Runtime) AlarmsInFlight() int64 { return rt.alarms.inflight.Load() }
