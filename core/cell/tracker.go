package cell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/wakeport"
)

// tracker is an instance's output gate: the commits (and wake
// publications) handed over but not yet known durable, in order, and the
// grant checks that must succeed after them before a reply goes out. It
// exists so that what a reply waits for is one self-contained state
// machine, testable without a driver, a log or a runtime.
//
// Its own mu guards it, never held while waiting: track is called under
// the instance's mu (which orders the commits), replies take snapshots
// and wait with no instance lock held.
type tracker struct {
	// grant is the cell's grant, which checkOwner asks. It is set at open,
	// before anything is tracked, and never changes.
	grant lease.Grant
	// provesOwnership, when set and true, says the cell's log resolves a
	// commit only once its owner's ownership was proven after the commit
	// was stored (durability.ProvesOwnership: the node log); checkOwner
	// then checks the grant's fence alone.
	provesOwnership *atomic.Bool
	// done is closed when the instance is shut down: watchers stop.
	done <-chan struct{}
	// fail resets the object (the instance's breakNow) and returns the
	// error every waiting reply gets.
	fail func(reason string, cause error) error

	mu      sync.Mutex
	pending []durability.Durable // not yet known done, in order
	// tracked counts what was ever added to pending; ackChecked is the
	// count up to which the grant was checked after durability. A reply
	// whose snapshot reaches past ackChecked checks the grant even when
	// everything it waits for was already durable (and so left pending)
	// by the time it looked.
	tracked, ackChecked uint64
	// ackRun is the grant check in flight (nil: none) and ackNext the one
	// queued behind it, for replies whose commits became durable after
	// ackRun started: at most one of each per instance (see checkAck).
	ackRun, ackNext *ackCheck
}

// track adds d (a commit, or a wake publication) to what later replies
// wait for, in order, and resets the object if d fails. The caller holds
// the instance's mu, so commits are tracked in the order they were made.
func (t *tracker) track(d durability.Durable) {
	t.mu.Lock()
	t.pending = append(t.pending, d)
	t.tracked++
	t.mu.Unlock()
	select {
	case <-d.Done(): // already known (a local log): no watcher needed
		if err := d.Err(); err != nil {
			go t.fail(failureReason(err), err)
		}
		return
	default:
	}
	// Watch d even if no reply waits for it, so a failure resets the
	// object whoever is (or is not) waiting.
	go func() {
		select {
		case <-d.Done():
		case <-t.done:
			return
		}
		if err := d.Err(); err != nil {
			t.fail(failureReason(err), err)
		}
	}()
}

// failureReason words the reset a failed Durable causes.
func failureReason(err error) string {
	var perr *wakeport.PublishError
	if errors.As(err, &perr) {
		return err.Error()
	}
	return fmt.Sprintf("a commit failed to become durable: %v", err)
}

// pendingSet is what a reply produced now must wait for: the commits not
// yet known durable, and upTo, how many commits had been tracked, so the
// grant is checked after them even when they were all durable by the
// time the reply looked.
type pendingSet struct {
	wait []durability.Durable
	upTo uint64
}

// snapshot is the commits a reply produced now must wait for.
func (t *tracker) snapshot() pendingSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.pending) {
		select {
		case <-t.pending[i].Done():
			if t.pending[i].Err() != nil {
				// Keep failures visible to every later reply.
				return pendingSet{slices.Clip(t.pending[i:]), t.tracked}
			}
			i++
			continue
		default:
		}
		break
	}
	t.pending = t.pending[i:]
	// Not a copy: pending only ever drops from the front and appends past
	// its end, so the elements a clipped slice shows never change.
	return pendingSet{slices.Clip(t.pending), t.tracked}
}

// errShutDown is await's answer when stop closed first.
var errShutDown = errors.New("cell: the instance shut down")

// await is the output gate: it returns once every commit in ps is durable
// and the grant still allows acknowledging writes. A failed commit or a
// refused grant resets the object (fail). When stop (nil: never) closes
// first it returns errShutDown.
func (t *tracker) await(ctx context.Context, ps pendingSet, stop <-chan struct{}) error {
	for _, d := range ps.wait {
		select {
		case <-d.Done():
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			if !isDone(d) {
				return errShutDown
			}
		}
		if err := d.Err(); err != nil {
			return t.fail(failureReason(err), err)
		}
	}
	// Checked after durability, for every reply that follows a commit the
	// grant was not checked after: a commit already durable when the
	// reply looked (a fast log) is checked all the same.
	if err := t.checkAck(ctx, ps.upTo); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return t.fail(fmt.Sprintf("the write was refused: %v", err), err)
	}
	return nil
}

// checkOwner is the acknowledgement check itself, run once per ackCheck:
// may this owner still acknowledge the writes that are durable? For a
// fleet grant it is a fresh read of own.json (lease.CheckAck), unless the
// log's durability already proved ownership (the node log's read of the
// node record after each bundle): then only the grant's fence
// (CheckWrite, no bucket read).
func (t *tracker) checkOwner(ctx context.Context) error {
	if t.provesOwnership != nil && t.provesOwnership.Load() {
		return t.grant.CheckWrite()
	}
	return lease.CheckAck(ctx, t.grant)
}

// ackCheck is one run of checkOwner shared by every reply it covers. upTo
// is the largest tracked count whose commits were all durable before the
// check started: only replies up to it may be released by it. It is fixed
// once the check starts; while queued it grows with each reply that joins
// (each joins only once its commits are durable); when it starts, it also
// covers every commit then known durable.
type ackCheck struct {
	upTo uint64
	done chan struct{}
	err  error // set before done closes
}

// checkAck returns once a grant check that started after the commits up
// to upTo were durable has succeeded: celld's acknowledgement rule, one
// check for many replies. The caller has seen every commit up to upTo
// durable. A reply covered by an earlier check returns at once; one the
// check in flight covers waits for it; any other waits for the next check,
// which starts when the one in flight ends and covers every reply queued
// by then. So at most one check is in flight and one queued per instance,
// however many replies wait, and no reply is released by a check that
// started before its commits were durable.
func (t *tracker) checkAck(ctx context.Context, upTo uint64) error {
	t.mu.Lock()
	if upTo <= t.ackChecked {
		t.mu.Unlock()
		return nil
	}
	var c *ackCheck
	switch {
	case t.ackRun == nil:
		// This reply runs the check itself (a lone caller hands nothing
		// to another goroutine), with its context's values but not its
		// cancellation: the answer is shared.
		c = &ackCheck{upTo: max(upTo, t.durableUpToLocked()), done: make(chan struct{})}
		t.ackRun = c
		t.mu.Unlock()
		if next := t.runAckCheck(context.WithoutCancel(ctx), c); next != nil {
			go t.runAckChecks(context.WithoutCancel(ctx), next)
		}
		return c.err
	case t.ackRun.upTo >= upTo:
		c = t.ackRun
	default:
		if t.ackNext == nil {
			t.ackNext = &ackCheck{done: make(chan struct{})}
		}
		t.ackNext.upTo = max(t.ackNext.upTo, upTo)
		c = t.ackNext
	}
	t.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// durableUpToLocked is how many tracked commits are known durable, all
// of them in order: a check starting now may cover them all, not only the
// commits of the reply that starts it (replies released by one upload
// then share one check).
func (t *tracker) durableUpToLocked() uint64 {
	n := t.tracked - uint64(len(t.pending)) // dropped: durable
	for _, d := range t.pending {
		if !isDurable(d) {
			break
		}
		n++
	}
	return n
}

func isDone(d durability.Durable) bool {
	select {
	case <-d.Done():
		return true
	default:
		return false
	}
}

func isDurable(d durability.Durable) bool {
	select {
	case <-d.Done():
		return d.Err() == nil
	default:
		return false
	}
}

// runAckChecks runs c, then the check queued behind it, if any, until
// none is queued.
func (t *tracker) runAckChecks(ctx context.Context, c *ackCheck) {
	for c != nil {
		c = t.runAckCheck(ctx, c)
	}
}

// runAckCheck runs c, the check in flight, releases its waiters and
// returns the check queued behind it (now in flight), if any, for the
// caller to run.
func (t *tracker) runAckCheck(ctx context.Context, c *ackCheck) *ackCheck {
	err := t.checkOwner(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	c.err = err
	if err == nil {
		t.ackChecked = max(t.ackChecked, c.upTo)
	}
	close(c.done)
	next := t.ackNext
	t.ackNext = nil
	if next != nil {
		next.upTo = max(next.upTo, t.durableUpToLocked())
	}
	t.ackRun = next
	return next
}
