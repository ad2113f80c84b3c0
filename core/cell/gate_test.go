package cell

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
)

func newTestGate() *gate { return &gate{clk: clock.NewFake(time.Unix(0, 0))} }

// acquireAsync queues on g and reports the result on the channel.
func acquireAsync(ctx context.Context, g *gate) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- g.acquire(ctx) }()
	return ch
}

// waitQueued waits until g has n waiters.
func waitQueued(t *testing.T, g *gate, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		got := len(g.waiters)
		g.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGateFIFOOneAtATime(t *testing.T) {
	g := newTestGate()
	ctx := context.Background()
	if err := g.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var chans []<-chan error
	for i := range 5 {
		chans = append(chans, acquireAsync(ctx, g))
		waitQueued(t, g, i+1)
	}
	for i, ch := range chans {
		g.release()
		if err := <-ch; err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
		// Exactly one woke: the others are still queued.
		for _, other := range chans[i+1:] {
			select {
			case <-other:
				t.Fatalf("release woke more than one waiter")
			default:
			}
		}
	}
	g.release()
	if g.held {
		t.Error("the gate is held after the last release")
	}
}

func TestGateCancelledWaiterLeavesQueue(t *testing.T) {
	g := newTestGate()
	g.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	a := acquireAsync(ctx, g)
	waitQueued(t, g, 1)
	b := acquireAsync(context.Background(), g)
	waitQueued(t, g, 2)
	cancel()
	if err := <-a; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	g.release()
	if err := <-b; err != nil {
		t.Fatalf("the next waiter did not get the gate: %v", err)
	}
}

func TestGateFail(t *testing.T) {
	g := newTestGate()
	g.acquire(context.Background())
	w := acquireAsync(context.Background(), g)
	waitQueued(t, g, 1)
	boom := errors.New("boom")
	first, shutdown := g.fail(boom)
	if first != boom || shutdown {
		t.Fatalf("fail = %v, %v; want boom and no shutdown while held", first, shutdown)
	}
	if err := <-w; err != boom {
		t.Errorf("queued waiter got %v, want the failure", err)
	}
	if err := g.acquire(context.Background()); err != boom {
		t.Errorf("a later acquire got %v, want the failure", err)
	}
	if again, _ := g.fail(errors.New("second")); again != boom {
		t.Errorf("the first failure must win, got %v", again)
	}
	if !g.release() {
		t.Error("releasing a failed gate must hand the shutdown to the holder")
	}

	free := newTestGate()
	if _, shutdown := free.fail(boom); !shutdown {
		t.Error("failing a free gate must hand the shutdown to the caller")
	}
}

func TestGateIdleTimer(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	fired := make(chan struct{}, 1)
	g := &gate{clk: clk, idleAfter: time.Minute, onIdle: func() { fired <- struct{}{} }}
	if err := g.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.release()
	g.leave()
	if clk.Pending() != 1 {
		t.Fatalf("%d timers after the last event left, want 1", clk.Pending())
	}
	g.enter(context.Background())
	if clk.Pending() != 0 {
		t.Fatal("a new event did not stop the idle timer")
	}
	g.release()
	g.leave()
	clk.Advance(time.Minute)
	select {
	case <-fired:
	default:
		t.Fatal("the idle callback did not run")
	}
	if !g.retireIfIdle(errRetired) {
		t.Error("an idle gate was not retired")
	}
	if err := g.enter(context.Background()); !errors.Is(err, errRetired) {
		t.Errorf("enter after retirement: %v", err)
	}
}

// An event in flight (queued, running or yielded) or a held gate keeps the
// object from being retired; a failed gate is not retired twice.
func TestGateRetireOnlyWhenIdle(t *testing.T) {
	ctx := context.Background()
	g := newTestGate()
	if err := g.enter(ctx); err != nil {
		t.Fatal(err)
	}
	if g.retireIfIdle(errRetired) {
		t.Fatal("a gate with an event running was retired")
	}
	g.release() // the event yields: in flight, gate free
	if g.retireIfIdle(errRetired) {
		t.Fatal("a gate with a yielded event in flight was retired")
	}
	if err := g.err(); err != nil {
		t.Fatalf("a refused retirement left the gate failed: %v", err)
	}
	g.leave()
	g.acquire(ctx) // held without an event counted (the runtime's own turn)
	if g.retireIfIdle(errRetired) {
		t.Fatal("a held gate was retired")
	}
	g.release()
	if !g.retireIfIdle(errRetired) {
		t.Fatal("an idle gate was not retired")
	}
	if g.retireIfIdle(errors.New("again")) {
		t.Fatal("a retired gate was retired again")
	}
	if err := g.err(); !errors.Is(err, errRetired) {
		t.Fatalf("err = %v, want the first retirement", err)
	}
}

// idle reports since when the gate has had no event in flight, and only
// then.
func TestGateIdle(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(100, 0))
	g := &gate{clk: clk}
	if _, ok := g.idle(); ok {
		t.Fatal("a gate that never saw an event reports idle")
	}
	g.enter(ctx)
	if _, ok := g.idle(); ok {
		t.Fatal("a gate with an event running reports idle")
	}
	g.release()
	if _, ok := g.idle(); ok {
		t.Fatal("a gate with a yielded event in flight reports idle")
	}
	clk.Advance(time.Second)
	g.leave()
	since, ok := g.idle()
	if !ok || !since.Equal(time.Unix(101, 0)) {
		t.Fatalf("idle = %v, %v; want since the last event left (101 s)", since, ok)
	}
	g.acquire(ctx)
	if _, ok := g.idle(); ok {
		t.Fatal("a held gate reports idle")
	}
	g.release()
	g.fail(errRetired)
	if _, ok := g.idle(); ok {
		t.Fatal("a failed gate reports idle")
	}
}

// idleAgain restarts the idle countdown only for an idle, working gate
// with an idle timeout; it replaces a pending countdown.
func TestGateIdleAgain(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(0, 0))
	fired := 0
	g := &gate{clk: clk, idleAfter: time.Minute, onIdle: func() { fired++ }}
	g.idleAgain()
	if clk.Pending() != 1 {
		t.Fatalf("%d timers after idleAgain on an idle gate, want 1", clk.Pending())
	}
	clk.Advance(30 * time.Second)
	g.idleAgain()
	if clk.Pending() != 1 {
		t.Fatalf("%d timers after a second idleAgain, want 1 (the countdown is replaced)", clk.Pending())
	}
	clk.Advance(30 * time.Second)
	if fired != 0 {
		t.Fatal("the replaced countdown still fired")
	}
	clk.Advance(30 * time.Second)
	if fired != 1 {
		t.Fatalf("the idle callback ran %d times, want 1", fired)
	}

	g.enter(ctx)
	g.idleAgain()
	if clk.Pending() != 0 {
		t.Fatal("idleAgain armed a countdown while an event is in flight")
	}
	g.release()
	g.leave()
	clk.Advance(time.Minute)

	for name, g := range map[string]*gate{
		"no idle timeout":   {clk: clk, onIdle: func() {}},
		"negative timeout":  {clk: clk, idleAfter: -1, onIdle: func() {}},
		"no idle callback":  {clk: clk, idleAfter: time.Minute},
		"failed":            {clk: clk, idleAfter: time.Minute, onIdle: func() {}, failed: errRetired},
		"event in flight":   {clk: clk, idleAfter: time.Minute, onIdle: func() {}, inflight: 1},
		"several in flight": {clk: clk, idleAfter: time.Minute, onIdle: func() {}, inflight: 2},
	} {
		n := clk.Pending()
		g.idleAgain()
		if clk.Pending() != n {
			t.Errorf("%s: idleAgain armed a countdown", name)
		}
	}
}

// With no idle timeout (0 or negative) the last event leaving arms
// nothing.
func TestGateNoIdleTimeout(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		clk := clock.NewFake(time.Unix(0, 0))
		fired := false
		g := &gate{clk: clk, idleAfter: d, onIdle: func() { fired = true }}
		g.enter(context.Background())
		g.release()
		g.leave()
		if clk.Pending() != 0 || fired {
			t.Errorf("idleAfter %v: the last event leaving armed an idle timer (%d pending, fired %v)", d, clk.Pending(), fired)
		}
	}
	// The count of events in flight decides, not the last leave alone.
	clk := clock.NewFake(time.Unix(0, 0))
	g := &gate{clk: clk, idleAfter: time.Minute, onIdle: func() {}}
	g.enter(context.Background())
	g.release()
	g.enter(context.Background())
	g.release()
	g.leave()
	if clk.Pending() != 0 {
		t.Error("one of two events leaving armed the idle timer")
	}
	g.leave()
	if clk.Pending() != 1 {
		t.Error("the last event leaving did not arm the idle timer")
	}
}

// Failing the gate, or retiring it through waitQuiet, stops a pending
// idle countdown; waitQuiet waits for the events in flight.
func TestGateFailStopsIdleTimer(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	g := &gate{clk: clk, idleAfter: time.Minute, onIdle: func() {}}
	g.enter(context.Background())
	g.release()
	g.leave()
	if _, shutdown := g.fail(errRetired); !shutdown || clk.Pending() != 0 {
		t.Fatalf("fail on an idle gate: shutdown %v, %d timers left; want true, 0", shutdown, clk.Pending())
	}

	g = &gate{clk: clk, idleAfter: time.Minute, onIdle: func() {}}
	g.enter(context.Background())
	g.release()
	done := make(chan bool, 1)
	go func() {
		mine, err := g.waitQuiet(context.Background(), ErrClosed)
		done <- mine && err == nil
	}()
	for {
		g.mu.Lock()
		waiting := g.quiet != nil
		g.mu.Unlock()
		if waiting {
			break
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("waitQuiet returned with an event in flight")
	default:
	}
	g.leave() // arms the idle countdown, then wakes waitQuiet
	if !<-done {
		t.Fatal("waitQuiet did not retire the quiet gate")
	}
	if clk.Pending() != 0 {
		t.Fatal("waitQuiet left the idle countdown running")
	}
	if mine, _ := g.waitQuiet(context.Background(), ErrClosed); mine {
		t.Fatal("waitQuiet retired an already retired gate")
	}
}

// A waiter whose ctx ends just as the gate is handed to it passes the gate
// on, so the gate is never left held by nobody.
func TestGateCancelledWaiterPassesOnAHandover(t *testing.T) {
	for i := 0; i < 16; i++ {
		g := newTestGate()
		g.acquire(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		w := acquireAsync(ctx, g)
		waitQueued(t, g, 1)
		// The waiter's ctx ends, and before it can leave the queue (it
		// waits for g.mu, which this test holds) the holder hands it the
		// gate, as release does.
		g.mu.Lock()
		cancel()
		time.Sleep(time.Millisecond) // lets the waiter reach g.mu; either order is valid
		next := g.waiters[0]
		g.waiters = g.waiters[1:]
		next.ch <- nil
		g.mu.Unlock()
		if err := <-w; err == nil {
			g.release()
		}
		g.mu.Lock()
		held := g.held
		g.mu.Unlock()
		if held {
			t.Fatalf("round %d: the gate is held by nobody after a cancelled waiter", i)
		}
	}
}

// The idle-connection timer: it starts when the last event leaves, on the
// gate's clock, and an event stops it. Holding the gate for the release
// refuses while an event is in flight; an event arriving meanwhile queues
// and gets the gate at unhold; Close's waitQuiet returns once the hold
// ends; an idle eviction that found the gate held runs at unhold.
func TestGateReleaseTimerAndHold(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	fired := make(chan struct{}, 4)
	evicted := make(chan struct{}, 4)
	g := &gate{clk: clk, releaseAfter: 10 * time.Second, onRelease: func() { fired <- struct{}{} },
		idleAfter: time.Minute, onIdle: func() { evicted <- struct{}{} }}
	ctx := context.Background()
	if err := g.enter(ctx); err != nil {
		t.Fatal(err)
	}
	if g.holdIfIdle() {
		t.Fatal("held with an event in flight")
	}
	g.release()
	g.leave()
	clk.Advance(9 * time.Second)
	if err := g.enter(ctx); err != nil { // stops the timer
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	select {
	case <-fired:
		t.Fatal("the release timer fired with an event in flight")
	default:
	}
	g.release()
	g.leave()
	clk.Advance(10 * time.Second)
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the release timer did not fire after 10 s idle")
	}
	if !g.holdIfIdle() {
		t.Fatal("the idle gate could not be held")
	}
	entered := make(chan error, 1)
	go func() { entered <- g.enter(ctx) }()
	waitQueued(t, g, 1)
	if g.unhold() {
		t.Fatal("unhold asked for a shutdown")
	}
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	g.release()
	g.leave()

	if !g.holdIfIdle() {
		t.Fatal("the idle gate could not be held")
	}
	if g.retireIfIdle(errRetired) {
		t.Fatal("retired while held")
	}
	quiet := make(chan bool, 1)
	go func() { mine, _ := g.waitQuiet(ctx, ErrClosed); quiet <- mine }()
	time.Sleep(10 * time.Millisecond)
	select {
	case <-quiet:
		t.Fatal("waitQuiet returned while the gate was held")
	default:
	}
	g.unhold()
	select {
	case <-evicted:
	case <-time.After(5 * time.Second):
		t.Fatal("the eviction missed during the hold did not run at unhold")
	}
	select {
	case mine := <-quiet:
		if !mine {
			t.Fatal("waitQuiet did not retire the gate")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waitQuiet did not return after unhold")
	}
}
