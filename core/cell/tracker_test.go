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
	"github.com/cellb/cellb/core/wakeport"
)

// pendingSnapshot drops the commits known durable from the front, keeps
// the ones not yet known, and keeps a failed one (and everything after it)
// in front of every later reply.
func TestPendingSnapshot(t *testing.T) {
	ok1, ok2 := durability.Resolved(nil), durability.Resolved(nil)
	open := durability.NewFuture()
	tr := &tracker{pending: []durability.Durable{ok1, ok2, open}}
	if snap := tr.snapshot().wait; len(snap) != 1 || snap[0] != open {
		t.Fatalf("snapshot = %v, want only the commit not yet durable", snap)
	}
	if len(tr.pending) != 1 {
		t.Fatalf("%d commits still pending, want 1 (durable ones are dropped)", len(tr.pending))
	}
	open.Resolve(nil)
	if snap := tr.snapshot().wait; len(snap) != 0 || len(tr.pending) != 0 {
		t.Fatalf("snapshot = %v, pending %d; want nothing once all are durable", snap, len(tr.pending))
	}

	failed := durability.Resolved(errors.New("upload failed"))
	after := durability.Resolved(nil)
	tr.pending = []durability.Durable{durability.Resolved(nil), failed, after}
	for i := 0; i < 2; i++ {
		snap := tr.snapshot().wait
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

// ackTestTracker is a tracker under g whose failures fail the test.
func ackTestTracker(t *testing.T, g lease.Grant) (*tracker, chan struct{}) {
	done := make(chan struct{})
	fail := func(reason string, cause error) error {
		t.Errorf("the object was reset: %s", reason)
		return &BrokenObjectError{Reason: reason, Err: cause}
	}
	return &tracker{grant: g, done: done, fail: fail}, done
}

// commitAndSnapshot tracks a new commit, not yet durable, and takes the
// snapshot a reply produced right after it would wait for.
func commitAndSnapshot(tr *tracker) (*durability.Future, pendingSet) {
	f := durability.NewFuture()
	tr.track(f)
	return f, tr.snapshot()
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
	tr, done := ackTestTracker(t, g)
	defer close(done)

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
				f, ps := commitAndSnapshot(tr)
				queue = append(queue, f)
				qmu.Unlock()
				select {
				case wake <- struct{}{}:
				default:
				}
				if err := tr.await(context.Background(), ps, nil); err != nil {
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
	tr, done := ackTestTracker(t, g)
	defer close(done)
	ctx := context.Background()

	f1, ps1 := commitAndSnapshot(tr)
	f1.Resolve(nil)
	first := make(chan error, 1)
	go func() { first <- tr.await(ctx, ps1, nil) }()
	<-g.entered // the first check is in flight, held

	// A second commit becomes durable while the first check is held.
	f2, ps2 := commitAndSnapshot(tr)
	f2.Resolve(nil)
	second := make(chan error, 1)
	go func() { second <- tr.await(ctx, ps2, nil) }()
	// Wait until the second reply is queued for a check of its own.
	for deadline := time.Now().Add(10 * time.Second); ; {
		tr.mu.Lock()
		queued := tr.ackNext != nil && tr.ackNext.upTo >= ps2.upTo
		tr.mu.Unlock()
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
	if err := tr.await(ctx, tr.snapshot(), nil); err != nil {
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
	tr, done := ackTestTracker(t, g)
	defer close(done)
	ctx := context.Background()

	f1, ps1 := commitAndSnapshot(tr)
	f2, ps2 := commitAndSnapshot(tr)
	f1.Resolve(nil)
	f2.Resolve(nil) // one upload made both durable
	first := make(chan error, 1)
	go func() { first <- tr.await(ctx, ps1, nil) }()
	<-g.entered // the first reply's check is in flight, held
	second := make(chan error, 1)
	go func() { second <- tr.await(ctx, ps2, nil) }()
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
	tr := &tracker{}
	for range 64 {
		tr.pending = append(tr.pending, durability.NewFuture())
	}
	tr.tracked = 64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if ps := tr.snapshot(); len(ps.wait) != 64 {
			b.Fatal(len(ps.wait))
		}
	}
}

// A snapshot shares the pending list's memory, but what it shows never
// changes as the list drops durable commits and takes new ones.
func TestPendingSnapshotUnchangedByLaterTracking(t *testing.T) {
	tr, done := ackTestTracker(t, nil)
	tr.pending = make([]durability.Durable, 0, 64) // room to append in place
	defer close(done)
	a, b := durability.NewFuture(), durability.NewFuture()
	tr.track(a)
	tr.track(b)
	snap := tr.snapshot().wait
	a.Resolve(nil)
	tr.snapshot() // drops a
	var added []*durability.Future
	for range 10 {
		f := durability.NewFuture()
		added = append(added, f)
		tr.track(f)
	}
	if len(snap) != 2 || snap[0] != a || snap[1] != b {
		t.Fatalf("snapshot changed to %v", snap)
	}
	snap = append(snap, nil) // appending to a snapshot must not reach the list
	if got := tr.snapshot().wait; len(got) != 11 || got[0] != b || got[1] != added[0] {
		t.Fatalf("pending = %v after appending to a snapshot", got)
	}
	for _, f := range append(added, b) {
		f.Resolve(nil)
	}
}

// resets records the resets a tracker asks for (its fail).
type resets struct {
	mu      sync.Mutex
	reasons []string
	ch      chan string
}

func newResets() *resets { return &resets{ch: make(chan string, 16)} }

func (r *resets) fail(reason string, cause error) error {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason)
	r.mu.Unlock()
	r.ch <- reason
	return &BrokenObjectError{Reason: reason, Err: cause}
}

// waitReset returns the next reset's reason.
func (r *resets) waitReset(t *testing.T) string {
	t.Helper()
	select {
	case reason := <-r.ch:
		return reason
	case <-time.After(10 * time.Second):
		t.Fatal("the tracker never reset the object")
		return ""
	}
}

// A commit that fails to become durable resets the object whether or
// not a reply waits for it, and a reply waiting for it gets the reset.
func TestTrackerFailedCommitResets(t *testing.T) {
	r := newResets()
	done := make(chan struct{})
	defer close(done)
	tr := &tracker{grant: &ackGrant{}, done: done, fail: r.fail}

	// Nobody waits: the watcher resets the object.
	f := durability.NewFuture()
	tr.track(f)
	f.Resolve(errors.New("upload failed"))
	if got, want := r.waitReset(t), "a commit failed to become durable: upload failed"; got != want {
		t.Fatalf("reset %q, want %q", got, want)
	}

	// A reply waits for a commit that fails: it gets the reset.
	tr = &tracker{grant: &ackGrant{}, done: done, fail: r.fail}
	f2 := durability.NewFuture()
	tr.track(f2)
	ps := tr.snapshot()
	replied := make(chan error, 1)
	go func() { replied <- tr.await(context.Background(), ps, nil) }()
	f2.Resolve(errors.New("bucket gone"))
	var berr *BrokenObjectError
	if err := <-replied; !errors.As(err, &berr) || berr.Reason != "a commit failed to become durable: bucket gone" {
		t.Fatalf("reply: %v, want the reset", err)
	}

	// Already known failed when tracked (a local log's answer): reset too.
	tr = &tracker{grant: &ackGrant{}, done: done, fail: r.fail}
	tr.track(durability.Resolved(errors.New("disk full")))
	for r.waitReset(t) != "a commit failed to become durable: disk full" {
	}
}

// A failed wake publication resets the object in the publication's words.
func TestTrackerFailedPublicationResets(t *testing.T) {
	r := newResets()
	done := make(chan struct{})
	defer close(done)
	tr := &tracker{done: done, fail: r.fail}
	p := wakeport.Publication{Cell: "Counter:x", Epoch: 3, Seq: 7}
	f := durability.NewFuture()
	tr.track(publishedDurable{f, p})
	f.Resolve(errors.New("index unavailable"))
	want := (&wakeport.PublishError{Publication: p, Err: errors.New("index unavailable")}).Error()
	if got := r.waitReset(t); got != want {
		t.Fatalf("reset %q, want %q", got, want)
	}
}

// refusingGrant refuses every acknowledgement check.
type refusingGrant struct {
	ackGrant
	err error
}

func (g *refusingGrant) CheckAck(context.Context) error {
	g.calls.Add(1)
	return g.err
}

// A reply whose commits are durable but whose grant check is refused is
// not released: it gets the reset, and the refused check covers nothing,
// so the next reply checks again.
func TestTrackerRefusedCheckResets(t *testing.T) {
	r := newResets()
	done := make(chan struct{})
	defer close(done)
	g := &refusingGrant{err: errors.New("own.json names another node")}
	tr := &tracker{grant: g, done: done, fail: r.fail}
	f, ps := commitAndSnapshot(tr)
	f.Resolve(nil)
	var berr *BrokenObjectError
	if err := tr.await(context.Background(), ps, nil); !errors.As(err, &berr) || !errors.Is(err, g.err) {
		t.Fatalf("reply: %v, want a reset for the refusal", err)
	}
	if reason := r.waitReset(t); reason != "the write was refused: own.json names another node" {
		t.Fatalf("reset %q", reason)
	}
	if err := tr.await(context.Background(), tr.snapshot(), nil); err == nil {
		t.Fatal("a second reply was released although no check ever succeeded")
	}
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d checks, want 2 (a refused check covers nothing)", n)
	}
}

// A reply that stops waiting (its context ends) gets the context's error
// and resets nothing, whether it waited for a commit (which may still
// become durable) or for the grant check after it.
func TestTrackerAwaitCancelled(t *testing.T) {
	r := newResets()
	done := make(chan struct{})
	defer close(done)
	tr := &tracker{grant: &ackGrant{}, done: done, fail: r.fail}
	f, ps := commitAndSnapshot(tr)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.await(ctx, ps, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("reply: %v, want context.Canceled", err)
	}
	f.Resolve(nil)
	if err := tr.await(context.Background(), tr.snapshot(), nil); err != nil {
		t.Fatal(err)
	}

	// Its commits are durable and it waits for a grant check another
	// reply runs: it still just stops waiting.
	g := &ackGrant{entered: make(chan struct{}), hold: make(chan struct{})}
	tr = &tracker{grant: g, done: done, fail: r.fail}
	f1, ps1 := commitAndSnapshot(tr)
	f1.Resolve(nil)
	first := make(chan error, 1)
	go func() { first <- tr.await(context.Background(), ps1, nil) }()
	<-g.entered // the check is in flight, held
	f2, ps2 := commitAndSnapshot(tr)
	f2.Resolve(nil)
	ctx, cancel = context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- tr.await(ctx, ps2, nil) }()
	for deadline := time.Now().Add(10 * time.Second); ; { // until it waits for the next check
		tr.mu.Lock()
		queued := tr.ackNext != nil
		tr.mu.Unlock()
		if queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second reply never queued for a check")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("reply waiting for a check: %v, want context.Canceled", err)
	}
	g.hold <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reasons) != 0 {
		t.Fatalf("resets %q, want none", r.reasons)
	}
}

// Outgoing I/O waiting on an instance that shuts down stops waiting with
// errShutDown while its commit is still open, and goes through the check
// as usual when the commit resolved first.
func TestTrackerAwaitStops(t *testing.T) {
	r := newResets()
	done := make(chan struct{})
	defer close(done)
	tr := &tracker{grant: &ackGrant{}, done: done, fail: r.fail}
	f, ps := commitAndSnapshot(tr)
	stop := make(chan struct{})
	close(stop)
	if err := tr.await(context.Background(), ps, stop); !errors.Is(err, errShutDown) {
		t.Fatalf("await with stop closed and the commit open: %v, want errShutDown", err)
	}
	f.Resolve(nil)
	if err := tr.await(context.Background(), ps, stop); err != nil {
		t.Fatalf("await with stop closed and the commit durable: %v", err)
	}
	g, ps2 := commitAndSnapshot(tr)
	g.Resolve(errors.New("upload failed"))
	var berr *BrokenObjectError
	if err := tr.await(context.Background(), ps2, stop); !errors.As(err, &berr) {
		t.Fatalf("await with stop closed and the commit failed: %v, want the reset", err)
	}
}
