package cell

import (
	"context"
	"errors"
)

// The output gate for outgoing I/O (issue 22, point 4). A reply already
// waits for every commit made before it (tracker.await). Outgoing I/O a
// cell makes — Await's function, a call into another cell (Call,
// Stub.Fetch, typed calls), an R2 write through a host binding, a
// WebSocket send — waits the same way before it is made: otherwise the
// other side could act on a write that a failed commit then takes back.
//
// "Before it" means every commit of the cell made before the I/O, and the
// writes of the calling turn so far: Await and stub calls end the turn
// (its implicit transaction commits) before the I/O, so that commit is
// among the ones waited for (docs/decisions.md, "Outgoing I/O waits for
// the turn's own writes").

// unconfirmedKey marks a context whose outgoing I/O does not wait; the
// value is the instance the mark was made for.
type unconfirmedKey struct{}

// AllowUnconfirmed returns ctx marked so that outgoing I/O made with it —
// Await's function, Call, Stub.Fetch, R2 writes through a host binding,
// WebSocket sends — goes out at once instead of waiting until the calling
// cell's earlier commits are durable: Durable Objects' allowUnconfirmed,
// here per call. A failed commit still resets the object; I/O already
// made with the mark is not taken back. The mark applies only to the cell
// whose handler ctx belongs to: the called cell's own outgoing I/O and
// every reply are gated as usual. Outside a handler it returns ctx.
func AllowUnconfirmed(ctx context.Context) context.Context {
	ev := eventFrom(ctx)
	if ev == nil {
		return ctx
	}
	return context.WithValue(ctx, unconfirmedKey{}, ev.inst)
}

// unconfirmed reports whether ctx carries AllowUnconfirmed for inst.
func unconfirmed(ctx context.Context, inst *instance) bool {
	v, _ := ctx.Value(unconfirmedKey{}).(*instance)
	return v == inst
}

// WaitOutputGate returns once every commit made so far by the cell whose
// handler ctx belongs to is durable (and its grant still allows
// acknowledging them): what outgoing I/O waits for. It returns nil at once
// outside a handler or under AllowUnconfirmed, and the reset
// (*BrokenObjectError) when one of those commits failed: the I/O must then
// not be made. Writes of a turn still open are not commits yet: call it
// outside a turn (in Await's function) to cover them. Await, stub calls
// and host R2 bindings call it themselves.
func WaitOutputGate(ctx context.Context) error {
	ev := eventFrom(ctx)
	if ev == nil {
		return nil
	}
	return ev.inst.waitOutput(ctx, ev.inst.commits.snapshot())
}

// waitOutput is the output gate for outgoing I/O made with ctx: it waits
// for ps (a snapshot of the tracker taken when the I/O was made) unless
// ctx allows unconfirmed I/O. This is the one place outgoing I/O waits.
// New kinds of outgoing I/O use it through yield when they are made in a
// turn (yield(ctx, send): the turn's writes commit first and are waited
// for, as for Await), or call it with inst.commits.snapshot() when they
// are made outside one (a WebSocket send from a goroutine).
func (inst *instance) waitOutput(ctx context.Context, ps pendingSet) error {
	if unconfirmed(ctx, inst) {
		return nil
	}
	if err := inst.g.err(); err != nil {
		var berr *BrokenObjectError
		if errors.As(err, &berr) {
			return berr // reset: nothing the cell said is to go out
		}
		// Retired (evicted or closed): its log was flushed at shutdown.
		return nil
	}
	err := inst.commits.await(ctx, ps, inst.done)
	if errors.Is(err, errShutDown) {
		// The instance shut down while the I/O waited: a reset fails it,
		// an orderly shutdown flushed the log.
		var berr *BrokenObjectError
		if errors.As(inst.g.err(), &berr) {
			return berr
		}
		return nil
	}
	return err
}
