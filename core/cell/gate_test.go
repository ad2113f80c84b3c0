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
