package cell

import "context"

// Sync returns once every commit made before it is durable (Durable
// Objects' storage.sync()): a handler that must not act on its writes
// until they would survive a crash (tell a third party, say) calls it
// first. Called with the handler's context it ends the turn as Await
// does: the turn's transaction commits, other events may run while the
// commit uploads, and the handler continues in a new turn. Inside
// BlockConcurrencyWhile the gate is kept. Inside SQL.Transaction nothing
// commits and the gate is kept: it waits for the commits made before the
// turn (the transaction's own writes commit with the turn, later).
//
// If a commit it waits for fails, the object is reset and Sync returns
// the *BrokenObjectError (the handler's later storage calls fail too).
// Called from outside the object's turns it waits for what the object had
// committed when it was called.
func (s *State) Sync(ctx context.Context) error {
	inst := s.inst
	if ev := eventFrom(ctx); ev == nil || ev.inst != inst {
		return inst.awaitDurable(ctx, inst.commits.snapshot())
	}
	return yield(ctx, func(ctx context.Context) error {
		return inst.awaitDurable(ctx, inst.commits.snapshot())
	})
}
