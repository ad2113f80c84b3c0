package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/lease"
)

// tb is the part of testing.TB the cases use; Run and RunReport both hand
// them the shared runner's suite.Recorder.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Skipf(format string, args ...any)
}

type testCase struct {
	name string
	run  func(t tb, ctx context.Context, h Harness)
}

var cellSeq atomic.Uint64

func freshCell() string {
	return fmt.Sprintf("LeaseTest:c%d_%d", time.Now().UnixNano(), cellSeq.Add(1))
}

func newNode(t tb, ctx context.Context, h Harness) Node {
	t.Helper()
	n, err := h.NewNode(ctx)
	if err != nil {
		t.Fatalf("NewNode: %v", err)
	}
	return n
}

// acquire takes cell as an owner that writes: a grant whose epoch is
// recorded lazily (lease.EpochRecorder) records it, as the runtime does
// before its first write under the grant.
func acquire(t tb, ctx context.Context, n Node, cell string) lease.Grant {
	t.Helper()
	g, err := n.TryAcquire(ctx, cell)
	if err != nil {
		t.Fatalf("TryAcquire(%s): %v", cell, err)
	}
	if g == nil {
		t.Fatalf("TryAcquire(%s) returned no grant and no error", cell)
	}
	if r, ok := g.(lease.EpochRecorder); ok {
		if err := r.RecordEpoch(ctx); err != nil {
			t.Fatalf("RecordEpoch(%s): %v", cell, err)
		}
	}
	return g
}

func lost(g lease.Grant) bool {
	select {
	case <-g.Lost():
		return true
	default:
		return false
	}
}

// allCases are the lease cases, then the node log's (nodelog.go).
var allCases = append(leaseCases, nodeLogCases...)

var leaseCases = []testCase{
	{"AcquireGrants", func(t tb, ctx context.Context, h Harness) {
		n := newNode(t, ctx, h)
		defer n.Close(ctx)
		g := acquire(t, ctx, n, freshCell())
		if lost(g) || g.Err() != nil {
			t.Fatalf("a fresh grant is already lost: %v", g.Err())
		}
		if err := g.CheckWrite(); err != nil {
			t.Fatalf("CheckWrite on a fresh grant: %v", err)
		}
	}},
	{"Exclusive", func(t tb, ctx context.Context, h Harness) {
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer a.Close(ctx)
		defer b.Close(ctx)
		cell := freshCell()
		acquire(t, ctx, a, cell)
		_, err := b.TryAcquire(ctx, cell)
		var oe *lease.CellOwnedElsewhereError
		if !errors.As(err, &oe) {
			t.Fatalf("a second node took a held cell (err = %v); want *lease.CellOwnedElsewhereError", err)
		}
	}},
	{"EpochsGrow", func(t tb, ctx context.Context, h Harness) {
		a := newNode(t, ctx, h)
		defer a.Close(ctx)
		cell := freshCell()
		g1 := acquire(t, ctx, a, cell)
		if err := g1.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		g2 := acquire(t, ctx, a, cell)
		if g2.Epoch() <= g1.Epoch() {
			t.Fatalf("epoch did not grow across acquisitions: %d then %d", g1.Epoch(), g2.Epoch())
		}
	}},
	{"EpochsPassTheLog", func(t tb, ctx context.Context, h Harness) {
		lw, ok := h.(LogEpochs)
		if !ok {
			t.Skipf("harness keeps no log next to its leases")
			return
		}
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer a.Close(ctx)
		defer b.Close(ctx)
		cell := freshCell()
		prev := acquire(t, ctx, a, cell)
		if err := prev.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		// The log runs ahead of what the lease knows: another node takes
		// over, then the same node takes the cell again.
		for i, n := range []Node{b, b} {
			ahead := prev.Epoch() + 5
			if err := lw.WriteLogEpoch(ctx, cell, ahead); errors.Is(err, ErrUnsupported) {
				t.Skipf("harness cannot write the log")
				return
			} else if err != nil {
				t.Fatalf("WriteLogEpoch: %v", err)
			}
			g := acquire(t, ctx, n, cell)
			if g.Epoch() <= ahead {
				t.Fatalf("take %d: epoch %d granted although the cell's log already holds epoch %d: the new owner would write into another owner's generation", i+1, g.Epoch(), ahead)
			}
			if err := g.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			prev = g
		}
	}},
	{"ReleaseHandsOver", func(t tb, ctx context.Context, h Harness) {
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer a.Close(ctx)
		defer b.Close(ctx)
		cell := freshCell()
		g := acquire(t, ctx, a, cell)
		if err := g.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if !lost(g) || !errors.Is(g.Err(), lease.ErrReleased) {
			t.Fatalf("after Release: Lost closed=%v, Err=%v; want closed and lease.ErrReleased", lost(g), g.Err())
		}
		if g.CheckWrite() == nil {
			t.Fatalf("CheckWrite accepted a write on a released grant")
		}
		gb := acquire(t, ctx, b, cell)
		if gb.Epoch() <= g.Epoch() {
			t.Fatalf("new owner's epoch %d is not above the released %d", gb.Epoch(), g.Epoch())
		}
	}},
	{"CloseReleasesEverything", func(t tb, ctx context.Context, h Harness) {
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer b.Close(ctx)
		c1, c2 := freshCell(), freshCell()
		acquire(t, ctx, a, c1)
		acquire(t, ctx, a, c2)
		if err := a.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		acquire(t, ctx, b, c1)
		acquire(t, ctx, b, c2)
	}},
	{"CrashTakeover", func(t tb, ctx context.Context, h Harness) {
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer b.Close(ctx)
		cell := freshCell()
		ga := acquire(t, ctx, a, cell)
		a.Crash()
		if h.TTL() > 0 {
			if _, err := b.TryAcquire(ctx, cell); err == nil {
				t.Fatalf("a crashed node's cell was taken before its lease could have expired")
			}
			h.Advance(h.TTL() + h.TTL()/2)
		}
		// With a TTL of 0 a crash ends the claims at once (an OS lock
		// dies with its process), so the takeover must not wait.
		gb, err := b.TryAcquire(ctx, cell)
		if err != nil {
			t.Fatalf("a crashed node's cell could not be taken after TTL %v: %v", h.TTL(), err)
		}
		if gb.Epoch() <= ga.Epoch() {
			t.Fatalf("takeover epoch %d is not above the crashed owner's %d", gb.Epoch(), ga.Epoch())
		}
	}},
	{"SelfFence", func(t tb, ctx context.Context, h Harness) {
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer a.Close(ctx)
		defer b.Close(ctx)
		cell := freshCell()
		ga := acquire(t, ctx, a, cell)
		if err := a.Isolate(true); errors.Is(err, ErrUnsupported) {
			t.Skipf("harness cannot isolate a node")
			return
		} else if err != nil {
			t.Fatalf("Isolate: %v", err)
		}
		defer a.Isolate(false)
		h.Advance(h.TTL() + h.TTL()/2)
		// By now b may take the cell, so a must refuse to acknowledge.
		gb, err := b.TryAcquire(ctx, cell)
		if err != nil {
			t.Fatalf("the isolated node's cell could not be taken after its TTL: %v", err)
		}
		werr := ga.CheckWrite()
		var le *lease.LeaseLapsedError
		if !errors.As(werr, &le) {
			t.Fatalf("the isolated owner still acknowledges writes after epoch %d was granted elsewhere (CheckWrite = %v)", gb.Epoch(), werr)
		}
		if !lost(ga) {
			t.Fatalf("the isolated owner's grant is not marked lost")
		}
	}},
	{"PausedPastTTLStaysFenced", func(t tb, ctx context.Context, h Harness) {
		// A node paused past its TTL (SIGSTOP, a frozen VM) whose cell
		// was taken meanwhile renews its claim successfully when it
		// resumes — nobody changed it — but must never acknowledge under
		// a grant from before the pause again.
		a, b := newNode(t, ctx, h), newNode(t, ctx, h)
		defer a.Close(ctx)
		defer b.Close(ctx)
		cell := freshCell()
		ga := acquire(t, ctx, a, cell)
		if err := a.Pause(true); errors.Is(err, ErrUnsupported) {
			t.Skipf("harness cannot pause a node")
			return
		} else if err != nil {
			t.Fatalf("Pause: %v", err)
		}
		h.Advance(h.TTL() + h.TTL()/2)
		gb, err := b.TryAcquire(ctx, cell)
		if err != nil {
			a.Pause(false)
			t.Fatalf("the paused node's cell could not be taken after its TTL: %v", err)
		}
		if err := a.Pause(false); err != nil {
			t.Fatalf("resume: %v", err)
		}
		var le *lease.LeaseLapsedError
		if werr := ga.CheckWrite(); !errors.As(werr, &le) {
			t.Fatalf("the resumed owner still acknowledges writes after epoch %d was granted elsewhere (CheckWrite = %v)", gb.Epoch(), werr)
		}
		if err := lease.CheckAck(ctx, ga); err == nil {
			t.Fatalf("the resumed owner's acknowledgement check passed after epoch %d was granted elsewhere", gb.Epoch())
		}
		if !lost(ga) {
			t.Fatalf("the resumed owner's grant is not marked lost")
		}
		if err := lease.CheckAck(ctx, gb); err != nil {
			t.Fatalf("the new owner cannot acknowledge: %v", err)
		}
	}},
	{"OneWinnerUnderContention", func(t tb, ctx context.Context, h Harness) {
		const nodes = 6
		var ns []Node
		for i := 0; i < nodes; i++ {
			n := newNode(t, ctx, h)
			defer n.Close(ctx)
			ns = append(ns, n)
		}
		for round := 0; round < 5; round++ {
			cell := freshCell()
			var wg sync.WaitGroup
			var wins atomic.Int32
			errs := make(chan error, nodes)
			for _, n := range ns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := n.TryAcquire(ctx, cell); err == nil {
						wins.Add(1)
					} else if !errors.As(err, new(*lease.CellOwnedElsewhereError)) {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			if w := wins.Load(); w != 1 {
				// Every loser must have seen the winner; zero winners is a
				// liveness failure, two a safety failure.
				t.Fatalf("round %d: %d nodes took the same cell at once", round, w)
			}
			for err := range errs {
				t.Errorf("round %d: unexpected error: %v", round, err)
			}
		}
	}},
}
