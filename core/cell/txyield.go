package cell

import "context"

// yieldInTransaction is a yield made inside SQL.Transaction (Await, a
// stub call, Sync): the transaction is a critical section, as Durable
// Objects' async transaction() runs inside blockConcurrencyWhile. The turn
// neither commits nor gives up the gate: fn runs while no other event of
// the object can start, and the handler goes on in the same turn and the
// same open transaction, which commits or rolls back as a whole. While fn
// runs the turn is inactive, so storage used from fn fails with
// ErrNotInTurn, as inside any Await. The caller holds ev.mu; it is
// released here.
func (ev *event) yieldInTransaction(ctx context.Context, fn func(ctx context.Context) error) error {
	ev.active.Store(false)
	ev.mu.Unlock()
	ferr := fn(ctx)
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.finished {
		return ferr
	}
	if err := ev.inst.g.err(); err != nil {
		return err // reset meanwhile (a lease lost, Abort from elsewhere)
	}
	ev.active.Store(true)
	return ferr
}
