package cell

import (
	"context"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
)

// gate is an object's input gate: a FIFO lock that, when released, hands
// itself to exactly one waiter (the oldest). It also counts the events in
// flight (queued, running, yielded or waiting behind the output gate) so
// the runtime can tell when an object is quiet enough to evict or close.
//
// Once failed (the object broke, or was retired for eviction or Close),
// every queued and later acquirer gets the failure. Exactly one party
// then owns the gate for good and shuts the instance down: the holder at
// the time of failure when it releases, or the failing party when the gate
// was free.
type gate struct {
	mu       sync.Mutex
	held     bool
	waiters  []*gateWaiter
	failed   error
	inflight int
	quiet    chan struct{} // closed when inflight drops to zero

	clk       clock.Clock
	idleAfter time.Duration // <= 0: never evict
	onIdle    func()
	idleTimer clock.Timer
	// idleSince is when the last event left (zero while one is in flight
	// or before the first): the open-cell cap evicts the longest idle.
	idleSince time.Time

	// releaseAfter (<= 0: never) starts onRelease once no event has been
	// in flight for that long: the runtime closes the idle object's
	// database connection (Options.IdleConnTimeout).
	releaseAfter time.Duration
	onRelease    func()
	releaseTimer clock.Timer
	// hold: the runtime holds the gate between events (hold), not an
	// event; an eviction that found it so runs once it is given back.
	hold, evictMissed bool
}

type gateWaiter struct {
	ch chan error // buffered: the grant (nil) or the failure
}

// enter counts a new event in flight and queues it for the gate.
func (g *gate) enter(ctx context.Context) error {
	g.mu.Lock()
	if g.failed != nil {
		err := g.failed
		g.mu.Unlock()
		return err
	}
	g.inflight++
	g.idleSince = time.Time{}
	if g.idleTimer != nil {
		g.idleTimer.Stop()
		g.idleTimer = nil
	}
	g.stopReleaseLocked()
	g.mu.Unlock()
	if err := g.acquire(ctx); err != nil {
		g.leave()
		return err
	}
	return nil
}

// leave ends an event's life in flight.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight > 0 {
		return
	}
	if g.quiet != nil {
		close(g.quiet)
		g.quiet = nil
	}
	g.idleSince = g.clk.Now()
	if g.failed == nil && g.idleAfter > 0 && g.onIdle != nil {
		g.idleTimer = g.clk.AfterFunc(g.idleAfter, g.onIdle)
	}
	if g.failed == nil && g.releaseAfter > 0 && g.onRelease != nil {
		g.stopReleaseLocked()
		g.releaseTimer = g.clk.AfterFunc(g.releaseAfter, g.onRelease)
	}
}

func (g *gate) stopReleaseLocked() {
	if g.releaseTimer != nil {
		g.releaseTimer.Stop()
		g.releaseTimer = nil
	}
}

// holdIfIdle takes the free gate of an object with no event in flight, for
// the runtime's own work between events (closing the idle connection): an
// event that comes meanwhile queues as for any holder. It reports whether
// it took the gate; the caller gives it back with unhold.
func (g *gate) holdIfIdle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed != nil || g.inflight > 0 || g.held {
		return false
	}
	g.held, g.hold = true, true
	return true
}

// unhold gives back a gate holdIfIdle took: to the oldest waiter, or free.
// It reports true when the gate failed meanwhile: the caller then owns it
// for good and must shut the instance down (as release does).
func (g *gate) unhold() (shutdown bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = false
	if g.failed != nil {
		return true
	}
	if len(g.waiters) > 0 {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		w.ch <- nil
		return false
	}
	g.held = false
	if g.inflight == 0 {
		if g.quiet != nil {
			// Close waits for the object to be quiet: it is again.
			close(g.quiet)
			g.quiet = nil
		}
		if g.evictMissed && g.onIdle != nil {
			// The idle timeout fired while the gate was held: run it now.
			g.evictMissed = false
			go g.onIdle()
		}
	}
	g.evictMissed = false
	return false
}

// acquire waits for the gate in FIFO order.
func (g *gate) acquire(ctx context.Context) error {
	g.mu.Lock()
	if g.failed != nil {
		err := g.failed
		g.mu.Unlock()
		return err
	}
	if !g.held && len(g.waiters) == 0 {
		g.held = true
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{ch: make(chan error, 1)}
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	select {
	case err := <-w.ch:
		return err
	case <-ctx.Done():
		g.mu.Lock()
		for i, x := range g.waiters {
			if x == w {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				g.mu.Unlock()
				return ctx.Err()
			}
		}
		g.mu.Unlock()
		// The gate was handed over (or failed) while ctx ended: pass it on.
		if err := <-w.ch; err == nil {
			g.release()
		}
		return ctx.Err()
	}
}

// release hands the gate to the oldest waiter. It reports true when the
// gate has failed: the caller then owns it for good and must shut the
// instance down.
func (g *gate) release() (shutdown bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed != nil {
		return true // stays held: nobody may use the instance again
	}
	if len(g.waiters) > 0 {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		w.ch <- nil
		return false
	}
	g.held = false
	return false
}

// fail breaks the gate with err (the first failure wins and is returned).
// Every waiter gets err. It reports shutdown=true when the gate was free:
// the caller now owns it and must shut the instance down. When the gate
// is held, its holder shuts down on release.
func (g *gate) fail(err error) (first error, shutdown bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed != nil {
		return g.failed, false
	}
	g.failed = err
	for _, w := range g.waiters {
		w.ch <- err
	}
	g.waiters = nil
	if g.idleTimer != nil {
		g.idleTimer.Stop()
		g.idleTimer = nil
	}
	g.stopReleaseLocked()
	if !g.held {
		g.held = true
		return err, true
	}
	return err, false
}

// failHeld fails a gate its caller holds; the caller shuts down.
func (g *gate) failHeld(err error) error {
	first, _ := g.fail(err)
	return first
}

// err is the failure, if any.
func (g *gate) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed
}

// retireIfIdle fails the gate with err only if no event is in flight, so an
// idle object can be evicted without racing a new event. It reports whether
// it did; the caller then owns the gate and shuts down.
func (g *gate) retireIfIdle(err error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed != nil || g.inflight > 0 || g.held {
		if g.hold && g.inflight == 0 {
			g.evictMissed = true
		}
		return false
	}
	g.failed = err
	g.held = true
	g.stopReleaseLocked()
	return true
}

// waitQuiet waits until no event is in flight, then retires the gate with
// err. It reports whether this call retired it (false: it had already
// failed, and whoever failed it shuts down).
func (g *gate) waitQuiet(ctx context.Context, err error) (bool, error) {
	for {
		g.mu.Lock()
		if g.failed != nil {
			g.mu.Unlock()
			return false, nil
		}
		if g.inflight == 0 && !g.held {
			g.failed = err
			g.held = true
			if g.idleTimer != nil {
				g.idleTimer.Stop()
				g.idleTimer = nil
			}
			g.stopReleaseLocked()
			g.mu.Unlock()
			return true, nil
		}
		if g.quiet == nil {
			g.quiet = make(chan struct{})
		}
		q := g.quiet
		g.mu.Unlock()
		select {
		case <-q:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// queued is the number of events waiting for the gate.
func (g *gate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// idle reports since when the object has had no event in flight; false
// while one is in flight, or once the gate failed.
func (g *gate) idle() (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed != nil || g.inflight > 0 || g.held || g.idleSince.IsZero() {
		return time.Time{}, false
	}
	return g.idleSince, true
}

// idleAgain restarts the idle countdown of an object that is still idle
// (eviction was put off).
func (g *gate) idleAgain() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed != nil || g.inflight > 0 || g.idleAfter <= 0 || g.onIdle == nil {
		return
	}
	if g.idleTimer != nil {
		g.idleTimer.Stop()
	}
	g.idleTimer = g.clk.AfterFunc(g.idleAfter, g.onIdle)
}
