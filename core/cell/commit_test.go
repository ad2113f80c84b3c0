package cell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
)

// pendingSnapshot drops the commits known durable from the front, keeps
// the ones not yet known, and keeps a failed one (and everything after it)
// in front of every later reply.
func TestPendingSnapshot(t *testing.T) {
	ok1, ok2 := durability.Resolved(nil), durability.Resolved(nil)
	open := durability.NewFuture()
	inst := &instance{pending: []durability.Durable{ok1, ok2, open}}
	if snap := inst.pendingSnapshot().wait; len(snap) != 1 || snap[0] != open {
		t.Fatalf("snapshot = %v, want only the commit not yet durable", snap)
	}
	if len(inst.pending) != 1 {
		t.Fatalf("%d commits still pending, want 1 (durable ones are dropped)", len(inst.pending))
	}
	open.Resolve(nil)
	if snap := inst.pendingSnapshot().wait; len(snap) != 0 || len(inst.pending) != 0 {
		t.Fatalf("snapshot = %v, pending %d; want nothing once all are durable", snap, len(inst.pending))
	}

	failed := durability.Resolved(errors.New("upload failed"))
	after := durability.Resolved(nil)
	inst.pending = []durability.Durable{durability.Resolved(nil), failed, after}
	for i := 0; i < 2; i++ {
		snap := inst.pendingSnapshot().wait
		if len(snap) != 2 || snap[0] != failed || snap[1] != after {
			t.Fatalf("snapshot %d = %v, want the failed commit and the one after it", i+1, snap)
		}
	}
}

// ackGrant is a grant that holds and counts its acknowledgement checks
// (lease.AckChecker). durable, if set, reports how many commits are
// durable; each check records what was durable when it started, and
// covered is the most any successful check covered once it returned.
type ackGrant struct {
	calls   atomic.Int64
	entered chan struct{} // if set, told each time a check starts
	hold    chan struct{} // if set, a check returns only once it can receive from it
	delay   time.Duration
	durable func() uint64

	mu      sync.Mutex
	covered uint64
}

func (g *ackGrant) Epoch() uint64                 { return 1 }
func (g *ackGrant) BucketWins() bool              { return true }
func (g *ackGrant) Lost() <-chan struct{}         { return nil }
func (g *ackGrant) Err() error                    { return nil }
func (g *ackGrant) CheckWrite() error             { return nil }
func (g *ackGrant) Release(context.Context) error { return nil }

func (g *ackGrant) CheckAck(context.Context) error {
	g.calls.Add(1)
	var at uint64
	if g.durable != nil {
		at = g.durable()
	}
	if g.entered != nil {
		g.entered <- struct{}{}
	}
	if g.hold != nil {
		<-g.hold
	}
	if g.delay > 0 {
		time.Sleep(g.delay) // stands for the read of own.json
	}
	g.mu.Lock()
	g.covered = max(g.covered, at)
	g.mu.Unlock()
	return nil
}

func (g *ackGrant) coveredUpTo() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.covered
}

func ackTestInstance(g lease.Grant) *instance {
	return &instance{rt: &Runtime{}, grant: g, done: make(chan struct{})}
}

// commitAndSnapshot tracks a new commit, not yet durable, and takes the
// snapshot a reply produced right after it would wait for.
func commitAndSnapshot(inst *instance) (*durability.Future, pendingSet) {
	f := durability.NewFuture()
	inst.trackLocked(f)
	return f, inst.pendingSnapshot()
}

// Many replies share one grant check (for a fleet grant, one read of
// own.json) instead of one each, and still none is released before a
// check that started once its commits were all durable has succeeded.
// 64 callers write in a loop; a log makes what is queued durable in
// groups.
func TestAckCheckCoalesced(t *testing.T) {
	const callers, writes = 64, 20
	var resolved atomic.Uint64
	g := &ackGrant{delay: 200 * time.Microsecond, durable: resolved.Load}
	inst := ackTestInstance(g)
	defer close(inst.done)

	var qmu sync.Mutex // orders tracking and queueing alike
	var queue []*durability.Future
	wake := make(chan struct{}, 1)
	stop := make(chan struct{})
	logDone := make(chan struct{})
	go func() { // the log: everything queued becomes durable at once, in order
		defer close(logDone)
		for {
			select {
			case <-wake:
			case <-stop:
				return
			}
			time.Sleep(100 * time.Microsecond) // stands for an upload
			qmu.Lock()
			batch := queue
			queue = nil
			qmu.Unlock()
			for _, f := range batch {
				resolved.Add(1)
				f.Resolve(nil)
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, callers*writes)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range writes {
				qmu.Lock()
				f, ps := commitAndSnapshot(inst)
				queue = append(queue, f)
				qmu.Unlock()
				select {
				case wake <- struct{}{}:
				default:
				}
				if err := inst.awaitDurable(context.Background(), ps); err != nil {
					errs <- err
					return
				}
				if c := g.coveredUpTo(); c < ps.upTo {
					errs <- fmt.Errorf("a reply up to commit %d was released when checks had covered only %d", ps.upTo, c)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-logDone
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	replies, calls := int64(callers*writes), g.calls.Load()
	t.Logf("%d replies, %d grant checks", replies, calls)
	if calls*4 > replies {
		t.Fatalf("%d grant checks for %d replies; want them shared (at most a quarter)", calls, replies)
	}
}

// A check that started before a commit was durable does not release that
// commit's reply: the reply waits for the next check, which starts when
// the one in flight returns.
func TestAckCheckStartedEarlyDoesNotRelease(t *testing.T) {
	g := &ackGrant{entered: make(chan struct{}), hold: make(chan struct{})}
	inst := ackTestInstance(g)
	defer close(inst.done)
	ctx := context.Background()

	f1, ps1 := commitAndSnapshot(inst)
	f1.Resolve(nil)
	first := make(chan error, 1)
	go func() { first <- inst.awaitDurable(ctx, ps1) }()
	<-g.entered // the first check is in flight, held

	// A second commit becomes durable while the first check is held.
	f2, ps2 := commitAndSnapshot(inst)
	f2.Resolve(nil)
	second := make(chan error, 1)
	go func() { second <- inst.awaitDurable(ctx, ps2) }()
	// Wait until the second reply is queued for a check of its own.
	for deadline := time.Now().Add(10 * time.Second); ; {
		inst.pmu.Lock()
		queued := inst.ackNext != nil && inst.ackNext.upTo >= ps2.upTo
		inst.pmu.Unlock()
		if queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second reply never queued for a check that starts after its commit was durable")
		}
		time.Sleep(time.Millisecond)
	}

	g.hold <- struct{}{} // the first check returns
	if err := <-first; err != nil {
		t.Fatalf("first reply: %v", err)
	}
	select {
	case err := <-second:
		t.Fatalf("the second reply was released (%v) by a check that started before its commit was durable", err)
	case <-g.entered: // the second check starts
	}
	select {
	case err := <-second:
		t.Fatalf("the second reply was released (%v) while its own check was still held", err)
	default:
	}
	g.hold <- struct{}{}
	if err := <-second; err != nil {
		t.Fatalf("second reply: %v", err)
	}
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d grant checks, want 2", n)
	}

	// A reply whose commits a successful check already covered is not
	// checked again.
	if err := inst.awaitDurable(ctx, inst.pendingSnapshot()); err != nil {
		t.Fatal(err)
	}
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d grant checks after a reply with nothing new, want 2", n)
	}
}

// A check covers every commit known durable when it starts, not only the
// commits of the reply that started it: replies released by one upload
// share it.
func TestAckCheckCoversWhatIsDurableAtItsStart(t *testing.T) {
	g := &ackGrant{entered: make(chan struct{}), hold: make(chan struct{})}
	inst := ackTestInstance(g)
	defer close(inst.done)
	ctx := context.Background()

	f1, ps1 := commitAndSnapshot(inst)
	f2, ps2 := commitAndSnapshot(inst)
	f1.Resolve(nil)
	f2.Resolve(nil) // one upload made both durable
	first := make(chan error, 1)
	go func() { first <- inst.awaitDurable(ctx, ps1) }()
	<-g.entered // the first reply's check is in flight, held
	second := make(chan error, 1)
	go func() { second <- inst.awaitDurable(ctx, ps2) }()
	g.hold <- struct{}{}
	for i := 0; i < 2; i++ {
		select {
		case err := <-first:
			if err != nil {
				t.Fatal(err)
			}
		case err := <-second:
			if err != nil {
				t.Fatal(err)
			}
		case <-g.entered:
			t.Fatal("a second check ran for a commit that was durable when the first one started")
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("%d grant checks, want 1", n)
	}
}

// BenchmarkPendingSnapshot: what a reply pays to learn what it waits for,
// with a group commit's worth (64) of commits pending.
func BenchmarkPendingSnapshot(b *testing.B) {
	inst := &instance{}
	for range 64 {
		inst.pending = append(inst.pending, durability.NewFuture())
	}
	inst.tracked = 64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if ps := inst.pendingSnapshot(); len(ps.wait) != 64 {
			b.Fatal(len(ps.wait))
		}
	}
}

// A snapshot shares the pending list's memory, but what it shows never
// changes as the list drops durable commits and takes new ones.
func TestPendingSnapshotUnchangedByLaterTracking(t *testing.T) {
	inst := &instance{done: make(chan struct{}), rt: &Runtime{}}
	inst.pending = make([]durability.Durable, 0, 64) // room to append in place
	defer close(inst.done)
	a, b := durability.NewFuture(), durability.NewFuture()
	inst.trackLocked(a)
	inst.trackLocked(b)
	snap := inst.pendingSnapshot().wait
	a.Resolve(nil)
	inst.pendingSnapshot() // drops a
	var added []*durability.Future
	for range 10 {
		f := durability.NewFuture()
		added = append(added, f)
		inst.trackLocked(f)
	}
	if len(snap) != 2 || snap[0] != a || snap[1] != b {
		t.Fatalf("snapshot changed to %v", snap)
	}
	snap = append(snap, nil) // appending to a snapshot must not reach the list
	if got := inst.pendingSnapshot().wait; len(got) != 11 || got[0] != b || got[1] != added[0] {
		t.Fatalf("pending = %v after appending to a snapshot", got)
	}
	for _, f := range append(added, b) {
		f.Resolve(nil)
	}
}
