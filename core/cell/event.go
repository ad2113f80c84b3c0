package cell

import (
	"context"
	"sync"
	"sync/atomic"
)

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
	inSavepoint := inst.db.spDepth > 0
	inst.mu.Unlock()
	if inSavepoint {
		return ev.yieldInTransaction(ctx, fn) // unlocks ev.mu
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
