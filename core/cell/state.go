package cell

import "context"

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
	var err error
	p := protect(func() { err = fn(ctx) })
	ev.mu.Lock()
	ev.bcw--
	ev.mu.Unlock()
	switch {
	case p != nil:
		inst.rt.logger.Error("cell blockConcurrencyWhile panicked", "cell", inst.key, "panic", p.Value, "stack", string(p.Stack))
		return inst.breakNow("blockConcurrencyWhile() panicked: "+errString(p), p)
	case err != nil:
		return inst.breakNow("blockConcurrencyWhile() failed: "+err.Error(), err)
	}
	return nil
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
	if !inst.conn.InTransaction() {
		if err := inst.conn.Begin(context.WithoutCancel(ctx)); err != nil {
			inst.mu.Unlock()
			return nil, err
		}
	}
	return inst.mu.Unlock, nil
}
