package fleet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// edgeStore fails reads of one key and records what the node asks of the
// bucket: listings, and the deadline each read of an own.json carried.
type edgeStore struct {
	store.Store
	failGet   string // a key whose Get fails
	lists     atomic.Int64
	mu        sync.Mutex
	deadlines []time.Duration // time left on each own.json Get's context
}

var errEdgeRead = errors.New("edge: injected read failure")

func (s *edgeStore) Get(ctx context.Context, key string) (*store.Object, error) {
	if key == s.failGet {
		return nil, errEdgeRead
	}
	if strings.HasSuffix(key, "/own.json") {
		if d, ok := ctx.Deadline(); ok {
			s.mu.Lock()
			s.deadlines = append(s.deadlines, time.Until(d))
			s.mu.Unlock()
		}
	}
	return s.Store.Get(ctx, key)
}

func (s *edgeStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, opts)
}

// TestUnreadableOwnerLeaseFailsTheTake: the record names another node
// whose lease cannot be read. That is no proof of death: the take fails
// with the read's error and writes no claim.
func TestUnreadableOwnerLeaseFailsTheTake(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	es := &edgeStore{Store: mem, failGet: layout.NodeKey("node_b")}
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	a := joinNode(t, es, clk, "node_a")
	putOwn(t, mem, "C:x", layout.OwnRecord{Node: "node_b", Epoch: 3})
	_, err := a.TryAcquire(ctx, "C:x")
	if !errors.Is(err, errEdgeRead) {
		t.Fatalf("err = %v, want the lease read's error", err)
	}
	obj, err := mem.Get(ctx, layout.OwnKey("C:x"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := layout.DecodeOwnRecord("", obj.Data); rec != (layout.OwnRecord{Node: "node_b", Epoch: 3}) {
		t.Fatalf("record = %+v, want it untouched", rec)
	}
}

// TestRecordBehindTheLogIsLogged: a take that jumps past the log's newest
// epoch says so (the operator's record was stale); an ordinary take,
// record epoch plus one, says nothing.
func TestRecordBehindTheLogIsLogged(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&buf, &mu}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	a, err := Join(ctx, Options{Store: mem, Node: "node_a", Clock: clk, Logger: logger, Rand: seeded{rand.New(rand.NewPCG(1, 2))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Kill)

	putOwn(t, mem, "C:plain", layout.OwnRecord{Node: "", Epoch: 5})
	if _, err := mem.Put(ctx, ltx.Key("C:plain", 5, 0, 1, 1), []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if g, err := a.TryAcquire(ctx, "C:plain"); err != nil || g.Epoch() != 6 {
		t.Fatalf("plain take: %v, %v; want epoch 6", g, err)
	}
	mu.Lock()
	if s := buf.String(); s != "" {
		t.Fatalf("an ordinary take logged %q", s)
	}
	mu.Unlock()

	putOwn(t, mem, "C:behind", layout.OwnRecord{Node: "", Epoch: 1})
	if _, err := mem.Put(ctx, ltx.Key("C:behind", 3, 0, 1, 1), []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if g, err := a.TryAcquire(ctx, "C:behind"); err != nil || g.Epoch() != 4 {
		t.Fatalf("take behind the log: %v, %v; want epoch 4", g, err)
	}
	mu.Lock()
	s := buf.String()
	mu.Unlock()
	for _, want := range []string{"ownership record is behind the cell's log", "record_epoch=1", "log_epoch=3", "epoch=4"} {
		if !strings.Contains(s, want) {
			t.Fatalf("log %q lacks %q", s, want)
		}
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestContentionListsOncePerAttempt: a node that loses every race lists
// the cell's log once per attempt, maxSteps/2 times, and no more.
func TestContentionListsOncePerAttempt(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	rs := &racingStore{Store: mem}
	es := &edgeStore{Store: rs}
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	a := joinNode(t, es, clk, "node_a")
	epoch := uint64(1)
	putOwn(t, mem, "C:busy", layout.OwnRecord{Node: "", Epoch: epoch})
	es.lists.Store(0)
	rs.before = func(key string) {
		epoch++
		putOwn(t, mem, "C:busy", layout.OwnRecord{Node: "", Epoch: epoch})
	}
	if _, err := a.TryAcquire(ctx, "C:busy"); err == nil {
		t.Fatal("took a cell it lost every race for")
	}
	// Each listing of the cell's logs lists every log's prefix.
	perListing := int64(len(layout.Logs()))
	if n, want := es.lists.Load(), perListing*maxSteps/2; n < want || n >= want+perListing {
		t.Fatalf("%d listings, want %d (%d attempts)", n, want, maxSteps/2)
	}
}

// TestCheckAckReadIsBounded: the read of own.json before an
// acknowledgement gives up within a third of the TTL, so a bucket that
// hangs cannot hold a reply past the point where the lease may lapse.
func TestCheckAckReadIsBounded(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	es := &edgeStore{Store: mem}
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	a := joinNode(t, es, clk, "node_a")
	g, err := a.TryAcquire(ctx, "C:ack")
	if err != nil {
		t.Fatal(err)
	}
	es.mu.Lock()
	es.deadlines = nil
	es.mu.Unlock()
	if err := g.(*grant).CheckAck(ctx); err != nil {
		t.Fatal(err)
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	if len(es.deadlines) != 1 {
		t.Fatalf("%d bounded reads of own.json, want 1", len(es.deadlines))
	}
	if left := es.deadlines[0]; left <= 0 || left > DefaultTTL/3 {
		t.Fatalf("the read had %v left, want at most TTL/3 = %v", left, DefaultTTL/3)
	}
}

// TestReleaseOfASupersededGrant: a grant this node replaced by taking the
// cell again is already lost; releasing it neither writes nor forgets the
// newer grant.
func TestReleaseOfASupersededGrant(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	a := joinNode(t, mem, clk, "node_a")
	g1, err := a.TryAcquire(ctx, "C:again")
	if err != nil {
		t.Fatal(err)
	}
	g2, err := a.TryAcquire(ctx, "C:again")
	if err != nil {
		t.Fatal(err)
	}
	if g1.Err() == nil {
		t.Fatal("the first grant still holds after the cell was taken again")
	}
	if err := g1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	held := a.grants["C:again"]
	a.mu.Unlock()
	if held != g2.(*grant) {
		t.Fatal("releasing the superseded grant made the node forget the newer one")
	}
	obj, err := mem.Get(ctx, layout.OwnKey("C:again"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := layout.DecodeOwnRecord("", obj.Data); rec != (layout.OwnRecord{Node: "node_a", Epoch: g2.Epoch()}) {
		t.Fatalf("record = %+v, want the newer grant's", rec)
	}
}
