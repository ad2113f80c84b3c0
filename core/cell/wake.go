package cell

import (
	"context"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/wakeport"
)

// The runtime is the wake port's Waker: core/wake activates due cells
// through it.
var _ wakeport.Waker = (*Runtime)(nil)

// Wake activates the cell named by cellKey ("<Class>:<id>", as in a wake
// index entry) exactly as a request would, so that its stored alarm is
// scheduled and runs if it is due. A cell without an alarm simply
// activates and is evicted again once idle. It returns once the activation
// has finished (the alarm itself runs as its own event right after); a
// cell already in memory is left alone, since its alarm is armed already.
//
// Errors come back as activation reports them: an *ActivationError
// wrapping the lease's refusal (errors.As a *lease.CellOwnedElsewhereError
// tells "owned elsewhere" apart), ErrUnknownClass for a class not
// registered here, *InvalidCellKeyError or *InvalidIDError for a key that
// names no cell of this deployment, ErrClosed after Close.
func (rt *Runtime) Wake(ctx context.Context, cellKey string) error {
	if err := ValidateCellKey(cellKey); err != nil {
		return err
	}
	className, idText, ok := strings.Cut(cellKey, ":")
	if !ok || idText == "" {
		return &InvalidCellKeyError{Key: cellKey, Reason: "it is not <Class>:<id>"}
	}
	rt.mu.Lock()
	cls := rt.classes[className]
	rt.mu.Unlock()
	if cls == nil {
		return fmt.Errorf("%w: %q", ErrUnknownClass, className)
	}
	id, err := IDFromString(rt.opts.ScriptName, className, idText)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	live := rt.cells[cellKey]
	rt.mu.Unlock()
	if live != nil && live.g.err() == nil {
		// Already in memory: its alarm timer is armed here, and an event
		// would only reset its idle countdown (an entry that is never
		// retired would then keep it resident for good).
		return nil
	}
	// An empty event: it waits for the activation (and its constructor)
	// like any request, and adds nothing of its own.
	return rt.dispatch(ctx, cls, id, func(ctx context.Context, obj any) error { return nil })
}
