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

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// Covered bundles are deleted in batches, off the acknowledgement path: none
// until deleteBatch are doomed, then that many at once, deleteConcurrency
// in flight; a smaller batch once the oldest doomed one has waited
// deleteWait; the rest at Close. A Close without final that comes mid-batch
// with the bucket failing (a crash) leaves every acknowledged row in a
// bundle or in its cell's prefix, and at every Delete the bundle's rows were
// in their prefixes already.
func TestCoveredBundlesAreDeletedInBatches(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	ss := newSession(mem, "node_a")
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	ws := &watchedDeletes{Store: mem, t: t, release: make(chan struct{})}
	var deleted atomic.Int64
	l := newLog(t, ws, ss, Options{Clock: clk, MeterProvider: countDeletes{n: &deleted}})
	t.Cleanup(ws.free) // runs before newLog's Close: a failed test's held Deletes must not hold it

	// 40 flushes, one cell each, two rows each: all acknowledged.
	const n = deleteBatch + 8
	cell := func(i int) string { return fmt.Sprintf("C:%02d", i) }
	for i := range n {
		if err := l.Submit(ctx, []Row{row(cell(i), 1, 2), row(cell(i), 1, 3)}); err != nil {
			t.Fatal(err)
		}
	}
	acked := bundles(t, mem, ss)
	if len(acked) != n {
		t.Fatalf("%d bundles for %d lone flushes", len(acked), n)
	}
	// tier writes cell i's rows up to txid into its own prefix, as a
	// cell's log does, then tells the node log.
	tier := func(i int, txid ltx.TXID) {
		if _, err := mem.Put(ctx, ltx.Key(cell(i), 1, 0, 2, txid), []byte("tiered"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		l.Covered(cell(i), 1, txid)
	}
	doomed := func() int {
		l.gc.mu.Lock()
		defer l.gc.mu.Unlock()
		return len(l.gc.doomed)
	}

	// One short of a batch: nothing is deleted yet (the batch would start
	// inside Covered, so this is not a race with the deleter).
	for i := range deleteBatch - 1 {
		tier(i, 3)
	}
	if got, d := ws.calls.Load(), doomed(); got != 0 || d != deleteBatch-1 {
		t.Fatalf("%d Deletes and %d doomed after %d covered bundles, want 0 and %d", got, d, deleteBatch-1, deleteBatch-1)
	}
	// The batch's bundle starts it: deleteConcurrency Deletes in flight at
	// once, never more.
	tier(deleteBatch-1, 3)
	ws.waitInFlight(deleteConcurrency)
	ws.free()
	for i := range deleteBatch {
		waitGone(t, mem, acked[i].Key)
	}
	if m := ws.maxInFlight.Load(); m != deleteConcurrency {
		t.Fatalf("at most %d Deletes in flight, want %d", m, deleteConcurrency)
	}
	if got := deleted.Load(); got != deleteBatch {
		t.Fatalf("bundles_deleted %d, want %d", got, deleteBatch)
	}

	// Three more wait for deleteWait on the log's clock.
	for i := deleteBatch; i < deleteBatch+3; i++ {
		tier(i, 3)
	}
	if got, d := ws.calls.Load(), doomed(); got != deleteBatch || d != 3 {
		t.Fatalf("%d Deletes and %d doomed, want %d and 3", got, d, deleteBatch)
	}
	clk.Advance(deleteWait - time.Millisecond)
	if d := doomed(); d != 3 {
		t.Fatalf("%d doomed before the oldest waited %v, want 3", d, deleteWait)
	}
	clk.Advance(time.Millisecond)
	for i := deleteBatch; i < deleteBatch+3; i++ {
		waitGone(t, mem, acked[i].Key)
	}

	// The last five: three covered, two covered only up to their first
	// row. The untiered age is the oldest uncovered bundle's.
	for i := deleteBatch + 3; i < n-2; i++ {
		tier(i, 3)
	}
	tier(n-2, 2)
	tier(n-1, 2)
	if d := doomed(); d != 3 {
		t.Fatalf("%d doomed, want the 3 fully covered", d)
	}
	if age := l.UntieredAge(); age != deleteWait {
		t.Fatalf("untiered age %v, want %v (the partly covered bundles were credited before the clock moved)", age, deleteWait)
	}
	// Crash mid-batch: the first Delete of Close's batch succeeds, then
	// the bucket fails everything.
	ws.crashAfter(1)
	if err := l.Close(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := deleted.Load(); got != deleteBatch+3+1 {
		t.Fatalf("bundles_deleted %d, want %d (failed Deletes are not counted)", got, deleteBatch+3+1)
	}
	left := bundles(t, mem, ss)
	if len(left) != 4 {
		t.Fatalf("%d bundles left after the crash, want 4 (2 covered whose Deletes failed, 2 not covered)", len(left))
	}
	for i := range n {
		for txid := ltx.TXID(2); txid <= 3; txid++ {
			if !ws.held(ctx, cell(i), 1, txid, "") {
				t.Errorf("acknowledged row %s/%d is in no bundle and not in its prefix", cell(i), txid)
			}
		}
	}
}

// watchedDeletes checks at every Delete of a bundle that each of its rows
// is in its cell's prefix (so the bucket still holds it once the bundle is
// gone), counts the Deletes in flight, holds them until release, and, once
// crashAfter ran out, fails every Delete as a crashed node's requests stop.
type watchedDeletes struct {
	store.Store
	t       *testing.T
	release chan struct{}

	calls, inFlight, maxInFlight atomic.Int64
	ok                           atomic.Int64 // Deletes left before the crash
	crash                        atomic.Bool
	mu                           sync.Mutex
	once                         sync.Once
}

func (w *watchedDeletes) free() { w.once.Do(func() { close(w.release) }) }

func (w *watchedDeletes) crashAfter(n int64) { w.ok.Store(n); w.crash.Store(true) }

func (w *watchedDeletes) Delete(ctx context.Context, key string) error {
	if !strings.HasPrefix(key, layout.NodeLogPrefix) {
		return w.Store.Delete(ctx, key)
	}
	w.calls.Add(1)
	in := w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	for m := w.maxInFlight.Load(); in > m && !w.maxInFlight.CompareAndSwap(m, in); m = w.maxInFlight.Load() {
	}
	<-w.release
	if w.crash.Load() && w.ok.Add(-1) < 0 {
		return errors.New("crashed")
	}
	// Checked and deleted under one lock: no other Delete changes the
	// bucket in between.
	w.mu.Lock()
	defer w.mu.Unlock()
	obj, err := w.Store.Get(ctx, key)
	if err != nil {
		w.t.Errorf("Delete of %s, which is not there: %v", key, err)
		return err
	}
	rows, err := ltx.DecodeBundle(obj.Data)
	if err != nil {
		w.t.Errorf("bundle %s: %v", key, err)
		return err
	}
	for _, r := range rows {
		if !w.held(ctx, r.Cell, r.CellEpoch, r.TXID, key) {
			w.t.Errorf("bundle %s deleted while its row %s/%d/%d is in no other bundle and not in its prefix", key, r.Cell, r.CellEpoch, r.TXID)
		}
	}
	return w.Store.Delete(ctx, key)
}

// held reports whether the bucket holds the row in its cell's prefix or
// in a bundle other than except.
func (w *watchedDeletes) held(ctx context.Context, cell string, epoch uint64, txid ltx.TXID, except string) bool {
	if top, err := Covered(ctx, w.Store, cell, epoch); err == nil && top >= txid {
		return true
	}
	page, err := store.ListAll(ctx, w.Store, store.ListOptions{Prefix: layout.NodeLogPrefix})
	if err != nil {
		w.t.Error(err)
		return false
	}
	for _, o := range page.Objects {
		if o.Key == except || !strings.HasSuffix(o.Key, ".ltxb") {
			continue
		}
		obj, err := w.Store.Get(ctx, o.Key)
		if err != nil {
			continue
		}
		rows, _ := ltx.DecodeBundle(obj.Data)
		for _, r := range rows {
			if r.Cell == cell && r.CellEpoch == epoch && r.TXID == txid {
				return true
			}
		}
	}
	return false
}

func (w *watchedDeletes) waitInFlight(n int64) {
	w.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if w.inFlight.Load() >= n {
			return
		}
	}
	w.t.Fatalf("fewer than %d Deletes in flight at once", n)
}

// countDeletes is a meter provider that counts bundles_deleted.
type countDeletes struct {
	noop.MeterProvider
	n *atomic.Int64
}

func (c countDeletes) Meter(string, ...metric.MeterOption) metric.Meter {
	return countingMeter{n: c.n}
}

type countingMeter struct {
	noop.Meter
	n *atomic.Int64
}

func (m countingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	if name == metrics.NameBundlesDeleted {
		return addCounter{n: m.n}, nil
	}
	return m.Meter.Int64Counter(name, opts...)
}

type addCounter struct {
	noop.Int64Counter
	n *atomic.Int64
}

func (c addCounter) Add(_ context.Context, v int64, _ ...metric.AddOption) { c.n.Add(v) }
