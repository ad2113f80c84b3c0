package fleet

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type seeded struct{ r *rand.Rand }

func (s seeded) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(s.r.Uint32())
	}
	return len(p), nil
}

func joinNode(t *testing.T, s store.Store, clk clock.Clock, name string) *Node {
	t.Helper()
	rc := &roundClock{Clock: clk}
	n, err := Join(context.Background(), Options{Store: s, Node: name, Clock: rc, Logger: quiet, Rand: seeded{rand.New(rand.NewPCG(1, uint64(len(name))))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Kill)
	return n
}

// roundClock is a node's clock that counts the node's renewal rounds: the
// shell re-arms its renewal timer (the node's only NewTimer) after each.
type roundClock struct {
	clock.Clock
	rounds atomic.Uint64
}

func (c *roundClock) NewTimer(d time.Duration) clock.Timer {
	return roundTimer{Timer: c.Clock.NewTimer(d), rounds: &c.rounds}
}

type roundTimer struct {
	clock.Timer
	rounds *atomic.Uint64
}

func (t roundTimer) Reset(d time.Duration) bool {
	active := t.Timer.Reset(d)
	t.rounds.Add(1)
	return active
}

// rounds is how many renewal rounds a node made by joinNode finished.
func rounds(t *testing.T, n *Node) uint64 {
	t.Helper()
	rc, ok := n.clock.(*roundClock)
	if !ok {
		t.Fatalf("node %s was not made by joinNode: its renewal rounds are not counted", n.ID())
	}
	return rc.rounds.Load()
}

// driven is a node without its shell: the test runs its renewals on its
// own thread, each when it falls due by the node's clock (the simulator,
// TestFenceIsLatched, the upkeep benchmark).
type driven struct {
	*Node
	next time.Time // when renewDue renews next
}

func newDriven(ctx context.Context, opts Options, r rules) (*driven, error) {
	n, err := newNode(ctx, opts, r)
	if err != nil {
		return nil, err
	}
	return &driven{Node: n, next: n.clock.Now().Add(RenewInterval(n.opts.TTL))}, nil
}

// renewDue runs every renewal that is due by the node's clock, until the
// node closed or fenced.
func (d *driven) renewDue() {
	for !d.clock.Now().Before(d.next) {
		d.mu.Lock()
		closed := d.closed
		d.mu.Unlock()
		if closed || !d.renew() {
			return
		}
		d.next = d.next.Add(RenewInterval(d.opts.TTL))
	}
}

// heldGrants is the node's grants, in the order of their cells' names.
func heldGrants(n *Node) []*grant {
	n.mu.Lock()
	defer n.mu.Unlock()
	gs := make([]*grant, 0, len(n.grants))
	for _, g := range n.grants {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].cell < gs[j].cell })
	return gs
}

func readOwn(t *testing.T, s store.Store, cell string) layout.OwnRecord {
	t.Helper()
	obj, err := s.Get(context.Background(), layout.OwnKey(cell))
	if err != nil {
		t.Fatal(err)
	}
	r, err := layout.DecodeOwnRecord("", obj.Data)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// step advances the fake clock by one renewal interval at a time until d
// has passed, waiting after each step for every live node's renewal round.
func step(t *testing.T, clk *clock.Fake, d time.Duration, nodes ...*Node) {
	t.Helper()
	for passed := time.Duration(0); passed < d; {
		inc := min(RenewInterval(DefaultTTL), d-passed)
		before := make([]uint64, len(nodes))
		for i, n := range nodes {
			before[i] = rounds(t, n)
		}
		clk.Advance(inc)
		passed += inc
		if inc < RenewInterval(DefaultTTL) {
			continue
		}
		for i, n := range nodes {
			eventually(t, "renewal round", func() bool {
				n.mu.Lock()
				closed := n.closed
				n.mu.Unlock()
				return rounds(t, n) > before[i] || closed
			})
		}
	}
}

func TestNodeLeaseRecordAndRenewal(t *testing.T) {
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinNode(t, s, clk, "node_a")
	obj, err := s.Get(context.Background(), "nodes/node_a.json")
	if err != nil {
		t.Fatal(err)
	}
	l, err := layout.DecodeNodeLease("nodes/node_a.json", obj.Data)
	if err != nil {
		t.Fatal(err)
	}
	if l.ExpiresMs != 1_010_000 || l.Addr != "node_a.cellb.invalid:9" || l.Load == nil || l.Load.PlacementWeight != 0 || l.Load.BucketFormat != 1 || len(l.ProbePublicKey) != 64 || l.OwnershipIndexGeneration != l.ProbePublicKey {
		t.Fatalf("lease %s", obj.Data)
	}
	step(t, clk, RenewInterval(DefaultTTL), n)
	o, _ := s.Get(context.Background(), "nodes/node_a.json")
	if l, _ := layout.DecodeNodeLease("nodes/node_a.json", o.Data); l.ExpiresMs != 1_000_000+3333+10_000 {
		t.Fatalf("renewed lease %s", o.Data)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), "nodes/node_a.json"); !store.IsNotFound(err) {
		t.Fatal("Close left the node lease behind")
	}
}

func TestTakeReleaseAndTakeover(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(5_000_000))
	a := joinNode(t, s, clk, "node_a")
	b := joinNode(t, s, clk, "node_b")
	const cell = "Counter:abc"
	ga, err := a.TryAcquire(ctx, cell)
	if err != nil {
		t.Fatal(err)
	}
	if ga.Epoch() != 1 || !ga.BucketWins() || readOwn(t, s, cell) != (layout.OwnRecord{Node: "node_a", Epoch: 1}) {
		t.Fatalf("first take: epoch %d, record %+v", ga.Epoch(), readOwn(t, s, cell))
	}
	_, err = b.TryAcquire(ctx, cell)
	var oe *lease.CellOwnedElsewhereError
	if !errors.As(err, &oe) || oe.Owner != "node_a" || err.Error() != "Durable Object Counter/abc is owned by another node" {
		t.Fatalf("b took a live owner's cell: %v", err)
	}
	// A wake on the same node takes a new epoch, and the old grant is gone.
	ga2, err := a.TryAcquire(ctx, cell)
	if err != nil || ga2.Epoch() != 2 {
		t.Fatalf("re-take: %v", err)
	}
	select {
	case <-ga.Lost():
	default:
		t.Fatal("the superseded grant was not lost")
	}
	if err := ga2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := readOwn(t, s, cell); r != (layout.OwnRecord{Node: "", Epoch: 2}) {
		t.Fatalf("released record %+v", r)
	}
	gb, err := b.TryAcquire(ctx, cell)
	if err != nil || gb.Epoch() != 3 {
		t.Fatalf("take after release: %v", err)
	}
	// a crashes: nothing released. b's lease lapses only after its own
	// deadline; a takes nothing until then.
	b.Kill()
	if _, err := a.TryAcquire(ctx, cell); !errors.As(err, &oe) {
		t.Fatalf("took a live (killed, unexpired) owner's cell: %v", err)
	}
	step(t, clk, DefaultTTL, a)
	if err := a.writable(cell); err != nil {
		t.Fatal(err)
	}
	ga3, err := a.TryAcquire(ctx, cell)
	if err != nil || ga3.Epoch() != 4 {
		t.Fatalf("takeover after expiry: %v", err)
	}
}

func TestSelfFencing(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	clk := clock.NewFake(time.UnixMilli(9_000_000))
	n := joinNode(t, fs, clk, "node_a")
	g, err := n.TryAcquire(ctx, "Room:x")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CheckWrite(); err != nil {
		t.Fatal(err)
	}
	// The bucket becomes unreachable for the node lease.
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: "nodes/node_a.json", Fault: faultstore.Fail, Times: -1})
	step(t, clk, 3*RenewInterval(DefaultTTL), n)
	select {
	case <-g.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline timer did not break the owned cell")
	}
	err = g.CheckWrite()
	var le *lease.LeaseLapsedError
	if !errors.As(err, &le) || err.Error() != "Room:x: this node's lease has lapsed; the write is refused" {
		t.Fatalf("CheckWrite after the deadline: %v", err)
	}
	if _, err := n.TryAcquire(ctx, "Room:y"); !errors.As(err, &le) {
		t.Fatalf("a fenced node took a cell: %v", err)
	}
}

func TestLostRecordRefusal(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinNode(t, s, clk, "node_a")
	const cell = "Counter:lost"
	key := ltx.Key(cell, 3, 0, 1, 1)
	if _, err := s.Put(ctx, key, []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := n.TryAcquire(ctx, cell)
	var rl *lease.RecordLostError
	if !errors.As(err, &rl) || rl.Epoch != 3 {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "ownership record lost: cells/Counter:lost/own.json is missing, but the bucket holds LTX") || !strings.Contains(msg, `{"node":"","epoch":3}`) {
		t.Fatalf("message %q", msg)
	}
	if _, err := s.Get(ctx, layout.OwnKey(cell)); !store.IsNotFound(err) {
		t.Fatal("the refusal wrote a record: it must never guess")
	}
	// The operator repairs it; the refusal still holds for 10 s.
	if _, err := s.Put(ctx, layout.OwnKey(cell), layout.OwnRecord{Node: "", Epoch: 3}.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.TryAcquire(ctx, cell); !errors.As(err, &rl) {
		t.Fatalf("refusal not held: %v", err)
	}
	step(t, clk, 10*time.Second, n)
	g, err := n.TryAcquire(ctx, cell)
	if err != nil || g.Epoch() != 4 {
		t.Fatalf("after repair: %v", err)
	}
}

func TestAmbiguousClaimIsReconciled(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinNode(t, fs, clk, "node_a")
	fs.LoseNext(faultstore.OpPut, layout.OwnKey("C:1"))
	g, err := n.TryAcquire(ctx, "C:1")
	if err != nil || g.Epoch() != 1 {
		t.Fatalf("lost response not reconciled: %v", err)
	}
	fs.DropNext(faultstore.OpPut, layout.OwnKey("C:2"))
	if _, err := n.TryAcquire(ctx, "C:2"); err != nil {
		t.Fatalf("dropped request not retried: %v", err)
	}
	if r := readOwn(t, fs, "C:2"); r != (layout.OwnRecord{Node: "node_a", Epoch: 1}) {
		t.Fatalf("record %+v", r)
	}
}

// TestVerifyOwnerOnAck: with celld's acknowledgement rule, a record that no
// longer names this node and epoch refuses the write.
func TestVerifyOwnerOnAck(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n, err := Join(ctx, Options{Store: s, Node: "node_a", Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Kill()
	g, err := n.TryAcquire(ctx, "C:v")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.CheckAck(ctx, g); err != nil {
		t.Fatalf("own record: %v", err)
	}
	if _, err := s.Put(ctx, layout.OwnKey("C:v"), layout.OwnRecord{Node: "node_x", Epoch: 9}.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var le *lease.LeaseLapsedError
	if err := lease.CheckAck(ctx, g); !errors.As(err, &le) {
		t.Fatalf("a record naming another node still acknowledged: %v", err)
	}
	select {
	case <-g.Lost():
	default:
		t.Fatal("the grant was not marked lost")
	}
}
