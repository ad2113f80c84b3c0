package cell

import (
	"context"
	"fmt"
	"time"

	"github.com/cellb/cellb/core/clock"
)

// State is what an object's constructor receives: the cell's identity and
// storage. It belongs to one instance; after a reset the fresh instance
// gets a fresh State.
type State struct {
	inst *instance
}

// ID is the object's id.
func (s *State) ID() ID { return s.inst.id }

// Key is the object's cell key ("<Class>:<id>").
func (s *State) Key() string { return s.inst.key }

// SQL is the cell's SQL database.
func (s *State) SQL() *SQL { return &SQL{inst: s.inst} }

// KV is the cell's key-value storage (celld's _cf_KV table).
func (s *State) KV() *KV { return &KV{inst: s.inst} }

// BlockConcurrencyWhile runs fn while keeping the object's input gate,
// even across yields inside fn (Await, stub calls): no other event of the
// object starts until fn returns. Writes still commit at each yield. If fn
// returns an error or panics, the object is reset and the error is a
// *BrokenObjectError.
//
// fn has Options.BlockConcurrencyTimeout (30 s by default) to return: past
// it the object is reset at once ("Durable Object reset because
// blockConcurrencyWhile() did not finish within 30s"), waiting and later
// callers reach a fresh instance, and fn's storage calls fail from then on.
//
// Called with the context of one of the object's own turns (a handler or
// the constructor) it nests in that turn; called from anywhere else it
// waits for the gate like any event.
func (s *State) BlockConcurrencyWhile(ctx context.Context, fn func(ctx context.Context) error) error {
	inst := s.inst
	if ev := eventFrom(ctx); ev != nil && ev.inst == inst && ev.active.Load() {
		return inst.blockWhile(ctx, ev, fn)
	}
	return inst.run(ctx, func(ctx context.Context, _ any) error {
		return inst.blockWhile(ctx, eventFrom(ctx), fn)
	})
}

func (inst *instance) blockWhile(ctx context.Context, ev *event, fn func(ctx context.Context) error) error {
	ev.mu.Lock()
	ev.bcw++
	ev.mu.Unlock()
	var limit clock.Timer
	if d := inst.rt.bcwLimit; d > 0 {
		limit = inst.rt.clk.AfterFunc(d, func() { inst.blockTimedOut(d) })
	}
	var err error
	p := protect(func() { err = fn(ctx) })
	ev.mu.Lock()
	ev.bcw--
	ev.mu.Unlock()
	if limit != nil && !limit.Stop() {
		// The limit passed first: the object was reset (the first reason
		// wins, so this is the timeout).
		return inst.breakNow(blockTimeoutReason(inst.rt.bcwLimit), &BlockConcurrencyTimeoutError{Limit: inst.rt.bcwLimit})
	}
	switch {
	case p != nil:
		inst.logPanic("cell blockConcurrencyWhile panicked", p)
		berr := inst.breakNow("blockConcurrencyWhile() panicked: "+errString(p), p)
		reAbort(p) // Abort ends the handler, not only fn
		return berr
	case err != nil:
		return inst.breakNow("blockConcurrencyWhile() failed: "+err.Error(), err)
	}
	return nil
}

// blockTimedOut resets an object whose BlockConcurrencyWhile callback ran
// past the limit. The callback still holds the gate and may never return,
// so the instance is shut down now rather than when the gate is released:
// its successor waits for that.
func (inst *instance) blockTimedOut(limit time.Duration) {
	inst.breakNow(blockTimeoutReason(limit), &BlockConcurrencyTimeoutError{Limit: limit})
	go inst.shutdown(inst.rt.bg, false)
}

func blockTimeoutReason(limit time.Duration) string {
	return fmt.Sprintf("blockConcurrencyWhile() did not finish within %v", limit)
}

func errString(p *PanicError) string { return p.Error() }

// lockTurn checks that ctx belongs to the turn holding the gate, takes the
// connection and opens the implicit transaction if the turn has none yet.
// The caller must call the returned unlock.
func (inst *instance) lockTurn(ctx context.Context) (unlock func(), err error) {
	ev := eventFrom(ctx)
	if ev == nil || ev.inst != inst || !ev.active.Load() {
		return nil, ErrNotInTurn
	}
	inst.mu.Lock()
	if err := inst.g.err(); err != nil {
		inst.mu.Unlock()
		return nil, err
	}
	if inst.closed {
		inst.mu.Unlock()
		return nil, errRetired
	}
	if inst.db.conn == nil {
		if err := inst.reopenLocked(ctx); err != nil {
			inst.mu.Unlock()
			return nil, inst.breakNow(fmt.Sprintf("the idle cell's database could not be reopened: %v", err), err)
		}
	}
	if !inst.db.conn.InTransaction() {
		if err := inst.db.conn.Begin(context.WithoutCancel(ctx)); err != nil {
			inst.mu.Unlock()
			return nil, err
		}
	}
	return inst.mu.Unlock, nil
}
