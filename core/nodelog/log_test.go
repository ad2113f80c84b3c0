package nodelog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

func newLog(t testing.TB, s store.Store, ss *session, opts Options) *Log {
	t.Helper()
	opts.Store, opts.Node, opts.Generation, opts.Confirmer = s, ss.node, ss.gen, ss
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = time.Millisecond
	}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background(), false) })
	return l
}

// row is a row of cell at epoch with a payload naming it (the node log
// never decodes payloads).
func row(cell string, epoch uint64, txid ltx.TXID) Row {
	return Row{Cell: cell, CellEpoch: epoch, TXID: txid, Data: []byte(fmt.Sprintf("%s/%d/%d", cell, epoch, txid))}
}

func bundles(t testing.TB, s store.Store, ss *session) []Bundle {
	t.Helper()
	bs, err := ListBundles(context.Background(), s, ss.node, ss.gen)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// A credited row is in a bundle at celld's key, and the credit's read of
// the node record came after the bundle was stored.
func TestSubmitStoresABundleThenConfirms(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	var putDone atomic.Bool
	fs := faultstore.New(s, faultstore.Config{})
	ss.before = func() {
		if !putDone.Load() {
			t.Error("the node record was read before the bundle was stored")
		}
	}
	l := newLog(t, &afterPut{Store: fs, done: &putDone}, ss, Options{})
	if err := l.Submit(context.Background(), []Row{row("C:a", 3, 2), row("C:a", 3, 3)}); err != nil {
		t.Fatal(err)
	}
	bs := bundles(t, s, ss)
	if len(bs) != 1 || bs[0].Key != layout.BundleKey("node_a", ss.gen, 1, 0) {
		t.Fatalf("bundles %+v", bs)
	}
	obj, _ := s.Get(context.Background(), bs[0].Key)
	rows, err := ltx.DecodeBundle(obj.Data)
	if err != nil || len(rows) != 2 || rows[1].TXID != 3 || string(rows[1].Payload(obj.Data)) != "C:a/3/3" {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if ss.reads.Load() != 1 {
		t.Fatalf("%d reads of the node record for one flush", ss.reads.Load())
	}
}

// afterPut marks done once a bundle PUT returned.
type afterPut struct {
	store.Store
	done *atomic.Bool
}

func (a *afterPut) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	v, err := a.Store.Put(ctx, key, data, opts)
	if strings.HasPrefix(key, layout.NodeLogPrefix) {
		a.done.Store(true)
	}
	return v, err
}

// A record that no longer shows the log open (a recoverer fenced it)
// credits nothing, fences the node, and no later submission is stored.
func TestASealedRecordCreditsNothing(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	l := newLog(t, s, ss, Options{})
	ss.write(&layout.NodeLog{State: layout.NodeLogRecovering, Epoch: 1, Ensemble: []string{}}, 0)
	err := l.Submit(context.Background(), []Row{row("C:a", 1, 2)})
	var ce *CreditError
	if !errors.As(err, &ce) || !ss.isFenced() {
		t.Fatalf("Submit after a fence = %v (fenced %v), want *CreditError and a fenced node", err, ss.isFenced())
	}
	n := len(bundles(t, s, ss))
	if err := l.Submit(context.Background(), []Row{row("C:b", 1, 2)}); !errors.Is(err, ErrFenced) {
		t.Fatalf("Submit on a fenced node = %v, want ErrFenced", err)
	}
	if got := len(bundles(t, s, ss)); got != n {
		t.Fatalf("a fenced node stored %d more bundles", got-n)
	}
}

// While a bundle PUT is held, every submission waits for the next flush,
// which starts as soon as the PUT returns and carries them all: a lone
// submission is never held, and a busy node's flushes are bounded by its
// PUTs.
func TestFlushesGroupWhileAPutIsInFlight(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	gate := &heldPuts{Store: s, release: make(chan struct{}), held: make(chan string, 8)}
	l := newLog(t, gate, ss, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	wg.Add(1)
	go func() { defer wg.Done(); errs <- l.Submit(context.Background(), []Row{row("C:first", 1, 2)}) }()
	<-gate.held // the first bundle's PUT is in flight
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.Submit(context.Background(), []Row{row(fmt.Sprintf("C:%02d", i), 1, 2), row(fmt.Sprintf("C:%02d", i), 1, 3)})
		}()
	}
	waitQueued(t, l, 40)
	close(gate.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	bs := bundles(t, s, ss)
	if len(bs) != 2 {
		t.Fatalf("%d bundles for a lone submission and 40 queued behind it, want 2", len(bs))
	}
	obj, _ := s.Get(context.Background(), bs[1].Key)
	rows, _ := ltx.DecodeBundle(obj.Data)
	if len(rows) != 80 {
		t.Fatalf("second bundle holds %d rows, want 80", len(rows))
	}
}

func waitQueued(t testing.TB, l *Log, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.mu.Lock()
		q := len(l.queue)
		l.mu.Unlock()
		if q >= n {
			return
		}
	}
	t.Fatalf("fewer than %d submissions queued", n)
}

// heldPuts holds bundle PUTs until release is closed, announcing each.
type heldPuts struct {
	store.Store
	release chan struct{}
	held    chan string
}

func (h *heldPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if strings.HasPrefix(key, layout.NodeLogPrefix) {
		select {
		case h.held <- key:
		default:
		}
		<-h.release
	}
	return h.Store.Put(ctx, key, data, opts)
}

// Reads of the node record are shared: 60 flushes and snapshots waiting
// at once cost at most two reads in a row (one in flight, one queued), and
// none of them is released by a read that started before it asked.
func TestConfirmReadsAreSharedAndStartAfterTheCall(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	release := make(chan struct{})
	var inRead atomic.Int64
	ss.before = func() {
		if inRead.Add(1) == 1 {
			<-release
		}
	}
	l := newLog(t, s, ss, Options{})
	first := make(chan error, 1)
	go func() { first <- l.Confirm(context.Background()) }()
	for inRead.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// These ask while the first read is in flight: they need the next.
	var wg sync.WaitGroup
	var released atomic.Int64
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Confirm(context.Background()); err != nil {
				t.Error(err)
			}
			released.Add(1)
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if released.Load() != 0 {
		t.Fatal("a caller was released by a read that started before it asked")
	}
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := ss.reads.Load(); got != 2 {
		t.Fatalf("%d reads for 61 callers, want 2", got)
	}
}

// A bundle is deleted once every cell in it covered its rows, not before
// (here by its batch's wait: batch_test.go tests the batches).
func TestCoveredBundlesAreDeleted(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	l := newLog(t, s, ss, Options{Clock: clk})
	ctx := context.Background()
	if err := l.Submit(ctx, []Row{row("C:a", 1, 2), row("C:a", 1, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Submit(ctx, []Row{row("C:b", 4, 7)}); err != nil {
		t.Fatal(err)
	}
	key0 := layout.BundleKey("node_a", ss.gen, 1, 0)
	key1 := layout.BundleKey("node_a", ss.gen, 1, 1)
	l.Covered("C:a", 1, 2) // not all of C:a's rows
	l.Covered("C:b", 4, 7)
	clk.Advance(deleteWait)
	waitGone(t, s, key1)
	if _, err := s.Get(ctx, key0); err != nil {
		t.Fatalf("bundle with an uncovered row deleted: %v", err)
	}
	if age := l.UntieredAge(); age < 0 {
		t.Fatalf("untiered age %v", age)
	}
	l.Done("C:a", 1)
	clk.Advance(deleteWait)
	waitGone(t, s, key0)
	if age := l.UntieredAge(); age != 0 {
		t.Fatalf("untiered age %v with nothing untiered", age)
	}
}

func waitGone(t testing.TB, s store.Store, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := s.Get(context.Background(), key); store.IsNotFound(err) {
			return
		}
	}
	t.Fatalf("%s was not deleted", key)
}

// A bundle whose PUT fails is not credited (every row of it fails), and a
// later flush goes on under the next sequence number.
func TestAFailedPutCreditsNothing(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	fs := faultstore.New(s, faultstore.Config{})
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: layout.BundleKey("node_a", ss.gen, 1, 0), Fault: faultstore.Fail, Times: -1})
	l := newLog(t, fs, ss, Options{UploadRetries: 2})
	var fe *FlushError
	if err := l.Submit(context.Background(), []Row{row("C:a", 1, 2)}); !errors.As(err, &fe) {
		t.Fatalf("Submit = %v, want *FlushError", err)
	}
	if err := l.Submit(context.Background(), []Row{row("C:b", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	bs := bundles(t, s, ss)
	if len(bs) != 1 || bs[0].Seq != 1 {
		t.Fatalf("bundles %+v, want the second flush's alone", bs)
	}
}

// A final Close deletes the session's bundles (every cell tiered before
// the node log closes); a fenced node's Close deletes nothing.
func TestCloseDeletesTheSessionUnlessFenced(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		s := memstore.New()
		ss := newSession(s, "node_a")
		l := newLog(t, s, ss, Options{})
		if err := l.Submit(context.Background(), []Row{row("C:a", 1, 2)}); err != nil {
			t.Fatal(err)
		}
		if fenced {
			ss.Fence("test")
		}
		if err := l.Close(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		if n := len(bundles(t, s, ss)); (n == 0) == fenced {
			t.Fatalf("fenced=%v: %d bundles left after Close", fenced, n)
		}
		if err := l.Submit(context.Background(), []Row{row("C:a", 1, 3)}); err == nil {
			t.Fatal("Submit after Close succeeded")
		}
	}
}

// The group-commit rule: after a bundle of 10 cells, 3 cells queued wait
// (at most half the last PUT's duration) for the others to come back; a
// lone commit after a lone bundle never waits.
func TestFlushWaitsForTheLastGroupToComeBack(t *testing.T) {
	s := memstore.New()
	ss := newSession(s, "node_a")
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	gate := &heldPuts{Store: s, release: make(chan struct{}), held: make(chan string, 8)}
	l := newLog(t, gate, ss, Options{Clock: clk})
	ctx := context.Background()
	submit := func(name string) chan error {
		done := make(chan error, 1)
		go func() { done <- l.Submit(ctx, []Row{row(name, 1, 2)}) }()
		return done
	}
	first := submit("C:lone")
	<-gate.held
	var ten []chan error
	for i := 0; i < 10; i++ {
		ten = append(ten, submit(fmt.Sprintf("C:%d", i)))
	}
	waitQueued(t, l, 10)
	clk.Advance(100 * time.Millisecond) // the PUT takes 100 ms
	gate.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-gate.held // the 10 go at once: more than the lone group before them
	clk.Advance(100 * time.Millisecond)
	gate.release <- struct{}{}
	for _, c := range ten {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	var three []chan error
	for i := 0; i < 3; i++ {
		three = append(three, submit(fmt.Sprintf("C:back%d", i)))
	}
	waitQueued(t, l, 3)
	select {
	case key := <-gate.held:
		t.Fatalf("%s went with 3 cells right after a bundle of 10: the rule did not wait", key)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(50 * time.Millisecond) // half the last PUT
	select {
	case <-gate.held:
	case <-time.After(5 * time.Second):
		t.Fatal("the wait never ended")
	}
	close(gate.release)
	for _, c := range three {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
}
