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

	// frames are the WebSocket sends made in the current turn: they wait
	// for the turn's commit (endTurn releases them). framesMu is apart
	// from mu because endTurn runs with mu held (yield).
	framesMu sync.Mutex
	frames   []*frame
}

// deferFrame holds f until the turn ends.
func (ev *event) deferFrame(f *frame) {
	ev.framesMu.Lock()
	ev.frames = append(ev.frames, f)
	ev.framesMu.Unlock()
}

// hasFrames reports whether the turn sent anything (most turns do not:
// they skip the snapshot).
func (ev *event) hasFrames() bool {
	ev.framesMu.Lock()
	defer ev.framesMu.Unlock()
	return len(ev.frames) > 0
}

// releaseFrames lets the turn's sends go once its commit is tracked: each
// waits for what the cell committed up to now (ps); if the turn failed
// they are dropped.
func (ev *event) releaseFrames(inst *instance, ps pendingSet, failed bool) {
	ev.framesMu.Lock()
	fs := ev.frames
	ev.frames = nil
	ev.framesMu.Unlock()
	for _, f := range fs {
		f.inst, f.ps, f.drop = inst, ps, failed
		close(f.ready)
	}
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
// fn is outgoing I/O (Await's function, a stub call): it runs only once
// every commit the cell made before it — the turn's own included — is
// durable (waitOutput), unless ctx allows unconfirmed I/O. If one of them
// fails, fn is not run and yield returns the reset.
//
// Goroutines sharing the handler's context may yield at the same time (a
// fan-out of stub calls): the first ends the turn, the last to come back
// takes it again.
func yield(ctx context.Context, fn func(ctx context.Context) error) error {
	ev := eventFrom(ctx)
	if ev == nil {
		return fn(ctx)
	}
	inst := ev.inst
	gated := func(ps pendingSet) error {
		if err := inst.waitOutput(ctx, ps); err != nil {
			return err
		}
		return fn(ctx)
	}
	ev.mu.Lock()
	switch {
	case ev.yields > 0 && !ev.finished:
		ev.yields++ // the turn is already yielded by a sibling goroutine
		ev.mu.Unlock()
		return ev.resume(ctx, gated(inst.commits.snapshot()))
	case ev.finished || !ev.active.Load():
		// Not in a turn: the event ended, or ctx is used inside Await.
		ev.mu.Unlock()
		return gated(inst.commits.snapshot())
	}
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
	// What the I/O waits for: every commit up to the turn's own.
	ps := inst.commits.snapshot()
	ev.active.Store(false)
	ev.yields = 1
	if ev.bcw == 0 {
		ev.holding = false
		inst.releaseGate()
	}
	ev.mu.Unlock()
	return ev.resume(ctx, gated(ps))
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
// fn is outgoing I/O: it starts only once every commit the cell made
// before it, the turn's own writes included, is durable (the output gate),
// unless ctx carries AllowUnconfirmed. If one of those commits fails, fn
// is not run and Await returns the reset (*BrokenObjectError).
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
