package cell

import "context"

// AbortError is the cause (BrokenObjectError.Err) of a reset the object
// asked for with State.Abort.
type AbortError struct {
	// Reason is the text the object gave.
	Reason string
}

func (e *AbortError) Error() string { return "cell: the object called Abort: " + e.Reason }

// abortSignal is what Abort panics with to end the handler: the runtime
// recognises it and logs no panic (the reset itself is logged).
type abortSignal struct{ reason string }

func (a abortSignal) String() string { return "cell.Abort: " + a.reason }

// Abort resets the object at once (Durable Objects' ctx.abort()): the
// turn's uncommitted writes are discarded, callers queued for the object
// and the caller of the aborting handler get a *BrokenObjectError whose
// Reason names reason (its Err is an *AbortError), and the next call
// builds a fresh instance from durable state.
//
// Called with the context of one of the object's handlers, Abort does not
// return: it ends the handler by panicking with a value the runtime
// recognises (no stack trace is logged). Recovering it does not undo the
// reset: the object's storage fails from then on and the reply is the
// BrokenObjectError whatever the handler returns. So call it from the
// handler's own goroutine, not from one it started. Called with any other
// context, Abort resets the object and returns.
func (s *State) Abort(ctx context.Context, reason string) {
	inst := s.inst
	inst.breakNow("the object called Abort: "+reason, &AbortError{Reason: reason})
	ev := eventFrom(ctx)
	if ev == nil || ev.inst != inst {
		return
	}
	ev.mu.Lock()
	finished := ev.finished
	ev.mu.Unlock()
	if finished {
		return
	}
	panic(abortSignal{reason: reason})
}

// logPanic logs a panic recovered from user code with its stack, unless
// it is Abort's signal, which is no failure of the code (breakNow already
// logged the reset and its reason).
func (inst *instance) logPanic(msg string, p *PanicError) {
	if _, ok := p.Value.(abortSignal); ok {
		return
	}
	inst.rt.logger.Error(msg, "cell", inst.key, "panic", p.Value, "stack", string(p.Stack))
}

// reAbort passes Abort's signal on past a recover the runtime made inside
// the handler (BlockConcurrencyWhile's): the handler must not go on.
func reAbort(p *PanicError) {
	if a, ok := p.Value.(abortSignal); ok {
		panic(a)
	}
}
