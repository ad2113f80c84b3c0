package admin

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
	"github.com/cellb/cellb/core/wake"
)

var now = time.UnixMilli(1_780_000_000_000)

func put(t testing.TB, s store.Store, key string, data []byte) {
	t.Helper()
	if _, err := s.Put(context.Background(), key, data, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func putOwn(t testing.TB, s store.Store, cell, node string, epoch uint64) {
	put(t, s, layout.OwnKey(cell), layout.OwnRecord{Node: node, Epoch: epoch}.Encode())
}

// putLTX writes an LTX file of size bytes (the content is not read).
func putLTX(t testing.TB, s store.Store, cell string, epoch uint64, level int, min, max uint64, size int) {
	put(t, s, layout.LTXKey(cell, epoch, level, min, max), make([]byte, size))
}

func putNode(t testing.TB, s store.Store, node string, expires time.Time, log *layout.NodeLog) {
	l := layout.NodeLease{Node: node, ExpiresMs: uint64(expires.UnixMilli()), Addr: node + ":9", Log: log}
	put(t, s, layout.NodeKey(node), l.Encode())
}

func opts() Options { return Options{Clock: clock.NewFake(now)} }

// seed builds a bucket with one cell of every kind.
func seed(t testing.TB) *memstore.Store {
	s := memstore.New()
	putNode(t, s, "n1", now.Add(10*time.Second), nil)
	putNode(t, s, "n2", now.Add(-time.Second), nil)
	put(t, s, layout.NodeKey("bad"), []byte(`{"node":"bad"}`))
	// healthy: held by live n1 at epoch 3, the log's newest.
	putOwn(t, s, "Counter:healthy", "n1", 3)
	putLTX(t, s, "Counter:healthy", 2, 0, 1, 3, 100)
	putLTX(t, s, "Counter:healthy", 3, 0, 1, 1, 200)
	putLTX(t, s, "Counter:healthy", 3, 0, 2, 5, 50)
	// lost: no record, the log at epoch 2.
	putLTX(t, s, "Counter:lost", 2, 0, 1, 1, 10)
	putLTX(t, s, "Counter:lost", 2, 0, 2, 2, 10)
	// stale: released at 1, the log at 4; its dead owner n2 is irrelevant.
	putOwn(t, s, "Counter:stale", "", 1)
	putLTX(t, s, "Counter:stale", 4, 0, 1, 2, 10)
	// held: stale, but live n1 holds it.
	putOwn(t, s, "Counter:held", "n1", 1)
	putLTX(t, s, "Counter:held", 2, 0, 1, 1, 10)
	// bad: own.json does not decode.
	put(t, s, layout.OwnKey("Counter:bad"), []byte(`{"node":"n1"}`))
	putLTX(t, s, "Counter:bad", 1, 0, 1, 1, 10)
	// snap: the newest epoch lost its snapshot.
	putOwn(t, s, "Counter:snap", "", 2)
	putLTX(t, s, "Counter:snap", 1, 0, 1, 1, 10)
	putLTX(t, s, "Counter:snap", 2, 0, 2, 3, 10)
	// cs: a changeset log, held by dead n2.
	putOwn(t, s, "Counter:cs", "n2", 1)
	put(t, s, layout.ChangesetKey("Counter:cs", 1, 1, 4, true), make([]byte, 7))
	// wake index: an alarm for healthy.
	put(t, s, layout.WakeFormatKey, []byte(`{"format":2}`))
	put(t, s, layout.WakerKey, wake.WakerRecord{Node: "n1", ExpiresMs: uint64(now.Add(time.Minute).UnixMilli())}.Encode())
	e := wake.Entry{Cell: "Counter:healthy", DueMs: now.Add(90 * time.Second).UnixMilli(), Identity: wake.Identity{Epoch: 3, Seq: 2}}
	put(t, s, e.Key(), e.Encode())
	return s
}

func byKey(r *Report) map[string]Cell {
	m := map[string]Cell{}
	for _, c := range r.Cells {
		m[c.Key] = c
	}
	return m
}

func kinds(c Cell) []string {
	var k []string
	for _, f := range c.Findings {
		k = append(k, f.Kind)
	}
	return k
}

func TestInspectSeededBucket(t *testing.T) {
	s := seed(t)
	r, err := Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 3 {
		t.Fatalf("nodes %+v", r.Nodes)
	}
	nodes := map[string]Node{}
	for _, n := range r.Nodes {
		nodes[n.ID] = n
	}
	if n := nodes["n1"]; !n.Live || n.Addr != "n1:9" || n.ExpiresMs != uint64(now.Add(10*time.Second).UnixMilli()) {
		t.Errorf("n1 %+v", n)
	}
	if n := nodes["n2"]; n.Live {
		t.Errorf("n2 %+v is live", n)
	}
	var re *layout.RecordError
	if n := nodes["bad"]; !errors.As(n.Err, &re) || re.Key != layout.NodeKey("bad") || n.Error == "" {
		t.Errorf("bad node %+v", n)
	}
	cells := byKey(r)
	if len(cells) != 7 {
		t.Fatalf("%d cells: %v", len(cells), cells)
	}
	h := cells["Counter:healthy"]
	if h.Class != "Counter" || h.ID != "healthy" || h.Record != RecordHeld || h.Owner != "n1" || !h.OwnerLive || h.Epoch != 3 ||
		h.LogEpoch != 3 || h.NewestTXID != 5 || h.LogObjects != 3 || h.LogBytes != 350 || len(h.Findings) != 0 ||
		fmt.Sprint(h.Modes) != "[ltx]" {
		t.Errorf("healthy %+v", h)
	}
	if h.AlarmDueMs == nil || *h.AlarmDueMs != now.Add(90*time.Second).UnixMilli() {
		t.Errorf("healthy alarm %v", h.AlarmDueMs)
	}
	if c := cells["Counter:lost"]; c.Record != RecordMissing || c.LogEpoch != 2 || fmt.Sprint(kinds(c)) != "[record-lost]" {
		t.Errorf("lost %+v", c)
	}
	if c := cells["Counter:stale"]; c.Record != RecordReleased || c.Epoch != 1 || c.LogEpoch != 4 || fmt.Sprint(kinds(c)) != "[stale-epoch]" {
		t.Errorf("stale %+v", c)
	}
	if c := cells["Counter:held"]; !c.OwnerLive || fmt.Sprint(kinds(c)) != "[stale-epoch]" {
		t.Errorf("held %+v", c)
	}
	if c := cells["Counter:bad"]; c.Record != RecordMalformed || !errors.As(c.Err, &re) || re.Key != layout.OwnKey("Counter:bad") ||
		c.LogEpoch != 1 || fmt.Sprint(kinds(c)) != "[malformed-record]" {
		t.Errorf("bad %+v", c)
	}
	if c := cells["Counter:snap"]; fmt.Sprint(kinds(c)) != "[missing-snapshot]" {
		t.Errorf("snap %+v", c)
	}
	if c := cells["Counter:cs"]; fmt.Sprint(c.Modes) != "[changeset]" || c.NewestTXID != 0 || c.Logs[0].Newest != 4 || c.OwnerLive || c.AlarmDueMs != nil {
		t.Errorf("cs %+v", c)
	}
	w := r.Wake
	if w.Format == nil || *w.Format != 2 || w.Waker != "n1" || !w.WakerLive || w.Entries != 1 || w.Due != 0 || w.Cells != 1 || w.Minutes != 1 {
		t.Errorf("wake %+v", w)
	}
	if errs := r.Errors(); len(errs) != 2 {
		t.Errorf("Errors() = %v, want the bad node's and the bad cell's", errs)
	}
	// A wake key outside celld's rules is reported, not counted.
	put(t, s, layout.WakeEntriesPrefix+"not-a-minute/Counter:x/0000000000000001-0000000000000001", []byte("{}"))
	r, err = Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	var ke *wake.KeyError
	if errs := r.Errors(); len(errs) != 3 || !errors.As(errs[2], &ke) || r.Wake.Entries != 1 || len(r.Wake.Errors) != 1 {
		t.Errorf("Errors() = %v, wake %+v", errs, r.Wake)
	}
}

// TestInspectReadsEveryPage seeds more cells, nodes and wake entries than
// a page holds: every one must be found.
func TestInspectReadsEveryPage(t *testing.T) {
	s := memstore.New()
	const n = 123
	for i := 0; i < n; i++ {
		cell := fmt.Sprintf("Counter:c%03d", i)
		putOwn(t, s, cell, "", 1)
		putLTX(t, s, cell, 1, 0, 1, 1, 1)
		putNode(t, s, fmt.Sprintf("n%03d", i), now.Add(time.Minute), nil)
		e := wake.Entry{Cell: cell, DueMs: now.UnixMilli() - 1, Identity: wake.Identity{Epoch: 1, Seq: 1}}
		put(t, s, e.Key(), e.Encode())
	}
	for i := 0; i < 12; i++ { // a cell whose log spans pages
		putLTX(t, s, "Counter:c000", 1, 0, uint64(i+2), uint64(i+2), 1)
	}
	o := opts()
	o.PageSize = 5
	var last [2]int64
	o.Progress = func(done, total int64) { last = [2]int64{done, total} }
	r, err := Inspect(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != n || len(r.Nodes) != n || r.Wake.Entries != n || r.Wake.Due != n {
		t.Fatalf("%d cells, %d nodes, %d entries (%d due), want %d each", len(r.Cells), len(r.Nodes), r.Wake.Entries, r.Wake.Due, n)
	}
	if c := r.Cells[0]; c.Key != "Counter:c000" || c.LogObjects != 13 || c.NewestTXID != 13 {
		t.Errorf("first cell %+v", c)
	}
	if r.Cells[n-1].Key != fmt.Sprintf("Counter:c%03d", n-1) {
		t.Errorf("last cell %s", r.Cells[n-1].Key)
	}
	if last != [2]int64{n, n} {
		t.Errorf("last progress %v", last)
	}
}

// gatedStore counts the reads of ownership records in flight and holds
// each one until bound of them are in flight (or every one has started),
// so that reads overlap whenever the reader lets them.
type gatedStore struct {
	store.Store
	bound, total int

	mu            sync.Mutex
	cond          *sync.Cond
	in, peak, all int
}

func newGatedStore(s store.Store, bound, total int) *gatedStore {
	g := &gatedStore{Store: s, bound: bound, total: total}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedStore) Get(ctx context.Context, key string) (*store.Object, error) {
	if !strings.HasSuffix(key, "/own.json") {
		return g.Store.Get(ctx, key)
	}
	g.mu.Lock()
	g.in++
	g.all++
	g.peak = max(g.peak, g.in)
	g.cond.Broadcast()
	for g.in < g.bound && g.all < g.total {
		g.cond.Wait()
	}
	g.mu.Unlock()
	// Hold the slot a while, so that a reader that should not have started
	// yet shows up in flight.
	for i := 0; i < 100; i++ {
		runtime.Gosched()
	}
	defer func() {
		g.mu.Lock()
		g.in--
		g.mu.Unlock()
	}()
	return g.Store.Get(ctx, key)
}

func TestInspectBoundsConcurrency(t *testing.T) {
	s := memstore.New()
	const cells = 200
	for i := 0; i < cells; i++ {
		putOwn(t, s, fmt.Sprintf("Counter:c%03d", i), "", 1)
	}
	o := opts()
	o.Concurrency = 3
	gs := newGatedStore(s, 3, cells)
	var cellsRead []Cell
	for i := 0; i < cells; i++ {
		cellsRead = append(cellsRead, Cell{})
	}
	err := forEach(context.Background(), cells, o.concurrency(), func(i int) {
		cellsRead[i] = *readCell(context.Background(), gs, o, fmt.Sprintf("Counter:c%03d", i), now.UnixMilli(), newLeaseCache(), wakeIndex{}, false)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cellsRead {
		if c.Err != nil || c.Record != RecordReleased {
			t.Fatalf("%+v", c)
		}
	}
	if gs.peak != 3 {
		t.Errorf("%d reads in flight at most, want 3", gs.peak)
	}
	// And through Inspect itself.
	gs = newGatedStore(s, 3, cells)
	r, err := Inspect(context.Background(), gs, o)
	if err != nil || len(r.Cells) != cells {
		t.Fatalf("%v, %d cells", err, len(r.Cells))
	}
	if gs.peak > 3 {
		t.Errorf("%d reads in flight, want at most 3", gs.peak)
	}
}

func readOwn(t *testing.T, s store.Store, cell string) string {
	t.Helper()
	o, err := s.Get(context.Background(), layout.OwnKey(cell))
	if err != nil {
		t.Fatal(err)
	}
	return string(o.Data)
}

func TestRepairLostRecord(t *testing.T) {
	s := seed(t)
	ctx := context.Background()
	p, err := Diagnose(ctx, s, "Counter:lost", opts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Write == nil || *p.Write != (layout.OwnRecord{Node: "", Epoch: 2}) || p.Condition != store.IfAbsent {
		t.Fatalf("plan %+v", p)
	}
	if _, err := Apply(ctx, s, p); err != nil {
		t.Fatal(err)
	}
	if got := readOwn(t, s, "Counter:lost"); got != `{"node":"","epoch":2}` {
		t.Errorf("own.json %s", got)
	}
	p, err = Diagnose(ctx, s, "Counter:lost", opts())
	if err != nil || p.Write != nil || !p.Healthy() {
		t.Errorf("after the repair: %+v %v", p, err)
	}
}

// TestRepairIsConditional: a record written between the diagnosis and the
// write wins; the repair writes nothing.
func TestRepairIsConditional(t *testing.T) {
	ctx := context.Background()
	for _, cell := range []string{"Counter:lost", "Counter:stale"} {
		s := seed(t)
		p, err := Diagnose(ctx, s, cell, opts())
		if err != nil || p.Write == nil {
			t.Fatalf("%s: %+v %v", cell, p, err)
		}
		putOwn(t, s, cell, "n9", 9) // a node took the cell meanwhile
		var ce *ConflictError
		if _, err := Apply(ctx, s, p); !errors.As(err, &ce) || !store.IsPreconditionFailed(err) {
			t.Errorf("%s: Apply = %v, want *ConflictError", cell, err)
		}
		if got := readOwn(t, s, cell); got != `{"node":"n9","epoch":9}` {
			t.Errorf("%s: own.json %s", cell, got)
		}
	}
}

func TestRepairStaleEpoch(t *testing.T) {
	s := seed(t)
	ctx := context.Background()
	p, err := Diagnose(ctx, s, "Counter:stale", opts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Write == nil || *p.Write != (layout.OwnRecord{Epoch: 4}) || p.Condition.Kind != store.MatchVersion {
		t.Fatalf("plan %+v", p)
	}
	if _, err := Apply(ctx, s, p); err != nil {
		t.Fatal(err)
	}
	if got := readOwn(t, s, "Counter:stale"); got != `{"node":"","epoch":4}` {
		t.Errorf("own.json %s", got)
	}
}

func TestRepairRefusals(t *testing.T) {
	ctx := context.Background()
	s := seed(t)
	var held *HeldError
	p, err := Diagnose(ctx, s, "Counter:held", opts())
	if !errors.As(err, &held) || held.Node != "n1" || p.Write != nil {
		t.Errorf("held: %+v %v", p, err)
	}
	var un *UnrepairableError
	var re *layout.RecordError
	p, err = Diagnose(ctx, s, "Counter:bad", opts())
	if !errors.As(err, &un) || !errors.As(err, &re) || re.Key != layout.OwnKey("Counter:bad") || p.Write != nil {
		t.Errorf("bad: %+v %v", p, err)
	}
	var ms *ltx.MissingSnapshotError
	p, err = Diagnose(ctx, s, "Counter:snap", opts())
	if !errors.As(err, &un) || !errors.As(err, &ms) || p.Write != nil {
		t.Errorf("snap: %+v %v", p, err)
	}
	var nc *NoCellError
	if _, err := Diagnose(ctx, s, "Counter:nothing", opts()); !errors.As(err, &nc) {
		t.Errorf("nothing: %v", err)
	}
	p, err = Diagnose(ctx, s, "Counter:healthy", opts())
	if err != nil || !p.Healthy() || p.Write != nil {
		t.Errorf("healthy: %+v %v", p, err)
	}
	if _, err := Apply(ctx, s, p); !errors.Is(err, ErrNothingToWrite) {
		t.Errorf("Apply(healthy) = %v", err)
	}
	// A dead celld owner whose node log is open must be recovered first.
	putNode(t, s, "celld1", now.Add(-time.Minute), &layout.NodeLog{State: "open", Epoch: 1, Ensemble: []string{}})
	putOwn(t, s, "Counter:stale", "celld1", 1)
	p, err = Diagnose(ctx, s, "Counter:stale", opts())
	if !errors.As(err, &un) || un.Findings[0].Kind != FindOwnerLog || p.Write != nil {
		t.Errorf("celld owner: %+v %v", p, err)
	}
}

// TestRepairRacesTwentyOperators: twenty concurrent repairs of one lost
// record; exactly one write applies, the others conflict.
func TestRepairRacesTwentyOperators(t *testing.T) {
	s := seed(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var applied, conflicts atomic.Int64
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := Diagnose(ctx, s, "Counter:lost", opts())
			if err != nil {
				t.Error(err)
				return
			}
			if p.Write == nil {
				return // diagnosed after another's repair: healthy
			}
			var ce *ConflictError
			switch _, err := Apply(ctx, s, p); {
			case err == nil:
				applied.Add(1)
			case errors.As(err, &ce):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if applied.Load() != 1 {
		t.Errorf("%d repairs applied, %d conflicted; want exactly one applied", applied.Load(), conflicts.Load())
	}
}

// TestOwnerLeaseUnreadable: a cell whose owner's lease does not decode is
// reported (the error names the lease) with the rest of it, and is not
// repaired, since the owner may be live.
func TestOwnerLeaseUnreadable(t *testing.T) {
	s := seed(t)
	put(t, s, layout.NodeKey("n3"), []byte(`{"node":"n3"}`))
	putOwn(t, s, "Counter:lost", "n3", 1)
	r, err := Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	var re *layout.RecordError
	c := byKey(r)["Counter:lost"]
	if !errors.As(c.Err, &re) || re.Key != layout.NodeKey("n3") || c.LogEpoch != 2 || c.LogObjects != 2 {
		t.Errorf("cell %+v", c)
	}
	if p, err := Diagnose(context.Background(), s, "Counter:lost", opts()); !errors.As(err, &re) || p != nil {
		t.Errorf("Diagnose: %+v %v", p, err)
	}
}

// TestSingleHostBucketHasNoLostRecords: without any node lease or
// ownership record, cells without a record are not reported lost.
func TestSingleHostBucketHasNoLostRecords(t *testing.T) {
	s := memstore.New()
	putLTX(t, s, "Counter:a", 3, 0, 1, 1, 10)
	putLTX(t, s, "Counter:b", 5, 0, 1, 2, 10)
	r, err := Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	if r.Fleet || len(r.Cells) != 2 {
		t.Fatalf("fleet %v, %d cells", r.Fleet, len(r.Cells))
	}
	for _, c := range r.Cells {
		if c.Record != RecordMissing || len(c.Findings) != 0 {
			t.Errorf("%+v", c)
		}
	}
	// One ownership record makes it a fleet bucket: the others are lost.
	putOwn(t, s, "Counter:c", "", 1)
	r, err = Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	if c := byKey(r)["Counter:a"]; !r.Fleet || fmt.Sprint(kinds(c)) != "[record-lost]" {
		t.Errorf("fleet %v, %+v", r.Fleet, c)
	}
}

// listCounter counts listings by prefix.
type listCounter struct {
	store.Store
	mu    sync.Mutex
	lists map[string]int
}

func (l *listCounter) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	l.mu.Lock()
	l.lists[opts.Prefix]++
	l.mu.Unlock()
	return l.Store.List(ctx, opts)
}

// TestInspectListsEachCellOnce: a cell with every kind of log costs one
// listing of its prefix, not one per log.
func TestInspectListsEachCellOnce(t *testing.T) {
	s := memstore.New()
	for i := 0; i < 20; i++ {
		cell := fmt.Sprintf("Counter:c%02d", i)
		putOwn(t, s, cell, "", 2)
		putLTX(t, s, cell, 1, 0, 1, 1, 1)
		put(t, s, layout.ChangesetKey(cell, 2, 1, 1, true), []byte("x"))
		put(t, s, layout.BackupKey(cell, 2, 1), []byte("x"))
	}
	lc := &listCounter{Store: s, lists: map[string]int{}}
	r, err := Inspect(context.Background(), lc, opts())
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Cells[3]; fmt.Sprint(c.Modes) != "[ltx changeset backup]" || c.LogObjects != 3 || c.LogEpoch != 2 {
		t.Fatalf("%+v", c)
	}
	cellLists := 0
	for prefix, n := range lc.lists {
		if strings.HasPrefix(prefix, layout.CellsPrefix) && prefix != layout.CellsPrefix {
			cellLists += n
		}
	}
	if cellLists != 20 {
		t.Errorf("%d listings under cells/ for 20 cells, want 20: %v", cellLists, lc.lists)
	}
}

// TestGapIsFoundNotRepaired: a gap in the newest chain is a finding that
// no record fixes; a stale record next to it is still repaired.
func TestGapIsFoundNotRepaired(t *testing.T) {
	s := memstore.New()
	putOwn(t, s, "Counter:g", "", 1)
	putLTX(t, s, "Counter:g", 2, 0, 1, 1, 10)
	putLTX(t, s, "Counter:g", 2, 0, 3, 4, 10)
	p, err := Diagnose(context.Background(), s, "Counter:g", opts())
	var un *UnrepairableError
	var g *ltx.GapError
	if !errors.As(err, &un) || !errors.As(err, &g) || g.After != 1 || g.Next != 3 {
		t.Fatalf("Diagnose: %v", err)
	}
	if fmt.Sprint(kinds(*p.Cell)) != "[stale-epoch gap]" || p.Write == nil || *p.Write != (layout.OwnRecord{Epoch: 2}) {
		t.Errorf("plan %+v, findings %v", p, kinds(*p.Cell))
	}
	var out strings.Builder
	err = Repair(context.Background(), s, "Counter:g", true, opts(), &out)
	if !errors.As(err, &g) || !strings.Contains(out.String(), "wrote") {
		t.Errorf("Repair: %v\n%s", err, out.String())
	}
	if got := readOwn(t, s, "Counter:g"); got != `{"node":"","epoch":2}` {
		t.Errorf("own.json %s", got)
	}
}

// TestApplyReadsBackAnAmbiguousWrite: a repair whose answer was lost is
// read back: applied when the record is there, a conflict otherwise.
func TestApplyReadsBackAnAmbiguousWrite(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		fault   faultstore.Fault
		applied bool
	}{{faultstore.LoseResponse, true}, {faultstore.Drop, false}} {
		fs := faultstore.New(seed(t), faultstore.Config{})
		p, err := Diagnose(ctx, fs, "Counter:lost", opts())
		if err != nil {
			t.Fatal(err)
		}
		fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: p.Key, Fault: c.fault})
		_, err = Apply(ctx, fs, p)
		if c.applied && err != nil || !c.applied && (err == nil || !store.IsAmbiguous(err) || !strings.Contains(err.Error(), "nothing was written")) {
			t.Errorf("fault %v: Apply = %v", c.fault, err)
		}
	}
}

// A node's node log shows in the report: its state and the session's
// bundles still in the bucket, with the oldest's time.
func TestInspectShowsNodeLogs(t *testing.T) {
	s := memstore.New()
	lg := layout.OpenNodeLog(1)
	key := layout.NodeKey("node_l")
	l := layout.NodeLease{Node: "node_l", ExpiresMs: uint64(now.Add(time.Minute).UnixMilli()), OwnershipIndexGeneration: "gen1", Log: lg}
	put(t, s, key, l.Encode())
	put(t, s, layout.BundleKey("node_l", "gen1", 1, 0), []byte("0123456789"))
	put(t, s, layout.BundleKey("node_l", "gen1", 1, 1), []byte("01234"))
	put(t, s, layout.BundleKey("node_l", "gen0", 1, 7), []byte("stale session"))
	putNode(t, s, "node_p", now.Add(time.Minute), nil)
	r, err := Inspect(context.Background(), s, opts())
	if err != nil {
		t.Fatal(err)
	}
	var got *NodeLog
	for _, n := range r.Nodes {
		switch n.ID {
		case "node_l":
			got = n.Log
		case "node_p":
			if n.Log != nil {
				t.Errorf("a lease without a log shows %+v", n.Log)
			}
		}
	}
	if got == nil || got.State != "open" || got.Epoch != 1 || got.Generation != "gen1" || got.Bundles != 2 || got.BundleBytes != 15 || got.OldestBundleMs == nil {
		t.Fatalf("node log %+v", got)
	}
	var out strings.Builder
	WriteReport(&out, r)
	if !strings.Contains(out.String(), "open, epoch 1") || !strings.Contains(out.String(), "2 bundles") {
		t.Fatalf("text report lacks the node log:\n%s", out.String())
	}
}
