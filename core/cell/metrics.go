package cell

import (
	"context"
	"errors"
	"time"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/metrics"
)

// errActivationFailed is the outcome of an activation that left no object.
var errActivationFailed = errors.New("cell: activation failed")

// initMetrics creates the runtime's instruments on Options.MeterProvider
// (none when it is nil) and starts reporting the open cells.
func (rt *Runtime) initMetrics() error {
	m, err := metrics.NewCell(rt.opts.MeterProvider)
	if err != nil {
		return err
	}
	stop, err := m.ObserveOpen(func() int {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return len(rt.cells)
	})
	if err != nil {
		return err
	}
	stopSockets, err := m.ObserveWebSockets(rt.OpenWebSockets)
	if err != nil {
		stop()
		return err
	}
	rt.metrics = m
	rt.stopMetrics = func() error { return errors.Join(stop(), stopSockets()) }
	return nil
}

// recordActivation records an activation that started at start, once it
// ended: ok when it left an object that is not broken, owned_elsewhere
// when another node or process owns the cell.
func (inst *instance) recordActivation(start time.Time) {
	err := inst.g.err()
	if err == nil && inst.obj == nil {
		err = errActivationFailed
	}
	inst.rt.metrics.Activation(inst.rt.bg, inst.cls.name, inst.rt.clk.Now().Sub(start), outcome(err))
}

// countTurn counts one call or alarm of a cell of class.
func (rt *Runtime) countTurn(ctx context.Context, class string, err error) {
	rt.metrics.Turn(ctx, class, outcome(err))
}

// outcome is metrics.Outcome, with the refusal routing resolves named
// apart: nothing ran here, and the host forwards the call to the owner.
func outcome(err error) string {
	if routine(err) {
		return metrics.OutcomeElsewhere
	}
	return metrics.Outcome(err)
}

// routine reports whether err is the everyday refusal that routing
// resolves (the cell is owned by another node or process), which is
// logged at Debug, not as a problem.
func routine(err error) bool {
	var oe *lease.CellOwnedElsewhereError
	return errors.As(err, &oe)
}

// warnUnlessRoutine logs msg at Warn, or at Debug when err is routine.
func (rt *Runtime) warnUnlessRoutine(msg string, err error, args ...any) {
	level := rt.logger.Warn
	if routine(err) {
		level = rt.logger.Debug
	}
	level(msg, append(args, "err", err)...)
}
