package fleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// recordingFolder is a LogFolder that records what it folded; during, if
// set, runs inside each fold.
type recordingFolder struct {
	mu     sync.Mutex
	folded []string
	during func(ctx context.Context) error
}

func (f *recordingFolder) FoldLog(ctx context.Context, node, gen string) error {
	f.mu.Lock()
	f.folded = append(f.folded, node+"/"+gen)
	during := f.during
	f.mu.Unlock()
	if during != nil {
		return during(ctx)
	}
	return nil
}

func (f *recordingFolder) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.folded)
}

func joinLogNode(t *testing.T, s store.Store, clk clock.Clock, name string, folder LogFolder) *Node {
	t.Helper()
	n, err := Join(context.Background(), Options{Store: s, Node: name, Clock: clk, Logger: quiet, NodeLog: true, Folder: folder, SweepInterval: -1,
		Rand: seeded{rand.New(rand.NewPCG(2, nameSeed(name)))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Kill)
	return n
}

func nameSeed(name string) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func readLease(t *testing.T, s store.Store, node string) *layout.NodeLease {
	t.Helper()
	l, _, err := ReadNodeLease(context.Background(), s, node)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestDecideRecover(t *testing.T) {
	self, other := "me", "them"
	fresh, stale := uint64(100_000-1_000), uint64(100_000-40_000)
	lease := func(state string, expires uint64, active bool, claimant *string, claimed *uint64) *layout.NodeLease {
		return &layout.NodeLease{Node: "dead", ExpiresMs: expires, OwnershipIndexGeneration: "g",
			Log: &layout.NodeLog{State: state, Epoch: 1, Ensemble: []string{}, Active: active, Claimant: claimant, ClaimedMs: claimed}}
	}
	for _, c := range []struct {
		name  string
		lease *layout.NodeLease
		gen   string
		want  RecoverKind
	}{
		{"absent", nil, "", RecoverDone},
		{"no log", &layout.NodeLease{Node: "dead", ExpiresMs: 1}, "", RecoverDone},
		{"sealed", lease(layout.NodeLogSealed, 1, false, nil, nil), "", RecoverDone},
		{"another session", lease(layout.NodeLogOpen, 1, false, nil, nil), "g2", RecoverDone},
		{"live", lease(layout.NodeLogOpen, 200_000, false, nil, nil), "", RecoverLive},
		{"expiring now is dead", lease(layout.NodeLogOpen, 100_000, false, nil, nil), "", RecoverFence},
		{"active needs celld", lease(layout.NodeLogOpen, 1, true, nil, nil), "", RecoverNeedsCelld},
		{"open", lease(layout.NodeLogOpen, 1, false, nil, nil), "g", RecoverFence},
		{"our claim", lease(layout.NodeLogRecovering, 1, false, &self, &fresh), "", RecoverFold},
		{"fresh claim", lease(layout.NodeLogRecovering, 1, false, &other, &fresh), "", RecoverWait},
		{"stale claim", lease(layout.NodeLogRecovering, 1, false, &other, &stale), "", RecoverTakeOver},
		{"claim without fields", lease(layout.NodeLogRecovering, 1, false, nil, nil), "", RecoverTakeOver},
	} {
		got := DecideRecover(RecoverState{Self: self, NowMs: 100_000, Lease: c.lease, Generation: c.gen})
		if got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Taking a cell whose owner died with its log open first recovers that
// log — fenced by this node's claim, folded, sealed, its bundles deleted
// — then raises the epoch; the dead session's late credit read would now
// fence it.
func TestTakingADeadOwnersCellRecoversItsLogFirst(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	folder := &recordingFolder{}
	dead := joinLogNode(t, mem, clk, "node_dead", folder)
	g, err := dead.TryAcquire(ctx, "C:x")
	if err != nil {
		t.Fatal(err)
	}
	gen := dead.Generation()
	if _, err := mem.Put(ctx, layout.BundleKey("node_dead", gen, 1, 0), []byte("bundle"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dead.Kill()
	clk.Advance(DefaultTTL + time.Second)
	taker := joinLogNode(t, mem, clk, "node_taker", folder)
	var checked bool
	folder.during = func(context.Context) error {
		l := readLease(t, mem, "node_dead")
		checked = l.Log.State == layout.NodeLogRecovering && *l.Log.Claimant == "node_taker" && l.ExpiresMs < uint64(clk.Now().UnixMilli())
		return nil
	}
	g2, err := taker.TryAcquire(ctx, "C:x")
	if err != nil {
		t.Fatal(err)
	}
	if g2.Epoch() != g.Epoch()+1 || folder.count() != 1 || !checked {
		t.Fatalf("epoch %d (was %d), folds %d, fenced during the fold %v", g2.Epoch(), g.Epoch(), folder.count(), checked)
	}
	l := readLease(t, mem, "node_dead")
	if l.Log.State != layout.NodeLogSealed || l.Log.Claimant != nil || l.Log.ClaimedMs != nil {
		t.Fatalf("dead record after recovery: %+v", l.Log)
	}
	if _, err := mem.Get(ctx, layout.BundleKey("node_dead", gen, 1, 0)); !store.IsNotFound(err) {
		t.Fatalf("bundle of the sealed session still there: %v", err)
	}
	// The dead session, were it still running, could credit nothing now.
	if err := dead.ConfirmLog(ctx); err == nil {
		t.Fatal("a sealed session's ConfirmLog succeeded")
	}
}

// Without a Folder, or for an active (celld, followers) log, the cell is
// refused and nothing is written to the dead node's record.
func TestUnrecoverableLogsAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, active := range []bool{false, true} {
		mem := memstore.New()
		clk := clock.NewFake(time.UnixMilli(1_000_000))
		lg := layout.OpenNodeLog(3)
		lg.Active = active
		l := layout.NodeLease{Node: "node_celld", ExpiresMs: 1, OwnershipIndexGeneration: "g", Log: lg}
		mem.Put(ctx, layout.NodeKey("node_celld"), l.Encode(), store.PutOptions{})
		putOwn(t, mem, "C:x", layout.OwnRecord{Node: "node_celld", Epoch: 2})
		var folder LogFolder
		if active {
			folder = &recordingFolder{}
		}
		n, err := Join(ctx, Options{Store: mem, Node: "node_b", Clock: clk, Logger: quiet, Folder: folder})
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.TryAcquire(ctx, "C:x")
		var oe *OwnerNeedsRecoveryError
		if !errors.As(err, &oe) || oe.Active != active || oe.Cell != "C:x" {
			t.Fatalf("active=%v: %v", active, err)
		}
		if got := readLease(t, mem, "node_celld"); got.Log.State != layout.NodeLogOpen {
			t.Fatalf("active=%v: the record was written: %+v", active, got.Log)
		}
		n.Kill()
	}
}

// A fresh claim by another node is waited for; a claim that stops
// beating for RecoveryClaimTTL is taken over.
func TestAStaleClaimIsTakenOverAndAFreshOneWaitedFor(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(10_000_000))
	other := "node_other"
	claimed := uint64(clk.Now().UnixMilli())
	lg := layout.OpenNodeLog(1)
	lg.State, lg.Claimant, lg.ClaimedMs = layout.NodeLogRecovering, &other, &claimed
	mem.Put(ctx, layout.NodeKey("node_dead"), layout.NodeLease{Node: "node_dead", ExpiresMs: 1, OwnershipIndexGeneration: "g", Log: lg}.Encode(), store.PutOptions{})
	folder := &recordingFolder{}
	n := joinLogNode(t, mem, clk, "node_b", folder)
	err := n.recoverLog(ctx, "node_dead", "")
	var ce *RecoveryClaimedError
	if !errors.As(err, &ce) || ce.Claimant != other || folder.count() != 0 {
		t.Fatalf("fresh claim: %v (folds %d)", err, folder.count())
	}
	clk.Advance(RecoveryClaimTTL)
	if err := n.recoverLog(ctx, "node_dead", ""); err != nil {
		t.Fatal(err)
	}
	if folder.count() != 1 || readLease(t, mem, "node_dead").Log.State != layout.NodeLogSealed {
		t.Fatalf("stale claim not taken over: folds %d", folder.count())
	}
}

// A fold longer than the heartbeat renews the claim; one whose claim is
// taken over meanwhile stops and does not seal.
func TestRecoveryHeartbeatsAndStopsWhenItsClaimIsTaken(t *testing.T) {
	ctx := context.Background()
	for _, taken := range []bool{false, true} {
		mem := memstore.New()
		clk := clock.NewFake(time.UnixMilli(10_000_000))
		mem.Put(ctx, layout.NodeKey("node_dead"), layout.NodeLease{Node: "node_dead", ExpiresMs: 1, OwnershipIndexGeneration: "g", Log: layout.OpenNodeLog(1)}.Encode(), store.PutOptions{})
		folder := &recordingFolder{}
		n := joinLogNode(t, mem, clk, "node_b", folder)
		var beats atomic.Int64
		folder.during = func(fctx context.Context) error {
			for i := 0; i < 3; i++ {
				before := readLease(t, mem, "node_dead").Log.ClaimedMs
				waitTimers(clk)
				clk.Advance(RecoveryHeartbeat)
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					if after := readLease(t, mem, "node_dead").Log.ClaimedMs; after != nil && *after != *before {
						beats.Add(1)
						break
					}
				}
			}
			if taken {
				other, now := "node_c", uint64(clk.Now().UnixMilli())
				l := *readLease(t, mem, "node_dead")
				l = Claimed(l, other, now)
				mem.Put(ctx, layout.NodeKey("node_dead"), l.Encode(), store.PutOptions{})
				waitTimers(clk)
				clk.Advance(RecoveryHeartbeat)
				select {
				case <-fctx.Done():
					return fctx.Err()
				case <-time.After(5 * time.Second):
					t.Error("the fold was not stopped when its claim was taken over")
				}
			}
			return nil
		}
		err := n.recoverLog(ctx, "node_dead", "")
		if beats.Load() != 3 {
			t.Fatalf("taken=%v: %d heartbeats over 3 periods", taken, beats.Load())
		}
		state := readLease(t, mem, "node_dead").Log.State
		if taken && (err == nil || state == layout.NodeLogSealed) {
			t.Fatalf("a recovery whose claim was taken over: err %v, state %s", err, state)
		}
		if !taken && (err != nil || state != layout.NodeLogSealed) {
			t.Fatalf("recovery: %v, state %s", err, state)
		}
	}
}

// waitTimers lets goroutines arm their timers on the fake clock.
func waitTimers(clk *clock.Fake) { time.Sleep(20 * time.Millisecond) }

// The same node id restarting recovers its previous session's log before
// it installs its lease (once that session's lease expired), then installs
// a lease with a new, open log.
func TestRestartRecoversThePreviousSessionFirst(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	folder := &recordingFolder{}
	first := joinLogNode(t, mem, clk, "node_a", folder)
	oldGen := first.Generation()
	first.Kill()
	done := make(chan *Node, 1)
	go func() {
		n, err := Join(ctx, Options{Store: mem, Node: "node_a", Clock: clk, Logger: quiet, NodeLog: true, Folder: folder, SweepInterval: -1})
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	waitTimers(clk)
	if folder.count() != 0 {
		t.Fatal("recovered a session whose lease was live")
	}
	for i := 0; i < 20 && len(done) == 0; i++ {
		clk.Advance(DefaultTTL / 5)
		waitTimers(clk)
	}
	n := <-done
	if n == nil {
		t.FailNow()
	}
	defer n.Kill()
	if folder.count() != 1 || !strings.HasSuffix(folder.folded[0], oldGen) {
		t.Fatalf("folds %v, want the previous session %s", folder.folded, oldGen)
	}
	l := readLease(t, mem, "node_a")
	if l.OwnershipIndexGeneration == oldGen || l.Log == nil || l.Log.State != layout.NodeLogOpen {
		t.Fatalf("installed lease %+v", l)
	}
	if err := n.ConfirmLog(ctx); err != nil {
		t.Fatal(err)
	}
}

// ConfirmLog holds while the record carries this session's open log; a
// record another session replaced fences the node.
func TestConfirmLogFencesOnAReplacedRecord(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinLogNode(t, mem, clk, "node_a", &recordingFolder{})
	if err := n.ConfirmLog(ctx); err != nil {
		t.Fatal(err)
	}
	l := *readLease(t, mem, "node_a")
	l.OwnershipIndexGeneration = "another"
	mem.Put(ctx, layout.NodeKey("node_a"), l.Encode(), store.PutOptions{})
	var fe *FencedError
	if err := n.ConfirmLog(ctx); !errors.As(err, &fe) || fe.Reason != FenceLogClosed {
		t.Fatalf("ConfirmLog on a replaced record = %v", err)
	}
	select {
	case <-n.Fenced():
	default:
		t.Fatal("not fenced")
	}
}

// ConfirmLog decides on every record it reads: the same bytes again are
// current again without a decode, and any change is decoded afresh — a
// renewal's record is current, a record that does not decode is an error
// that fences nothing, and a recoverer's fence fences the node even right
// after the record read current.
func TestConfirmLogDecidesOnEveryChange(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinLogNode(t, mem, clk, "node_a", &recordingFolder{})
	key := layout.NodeKey("node_a")
	put := func(data []byte) {
		t.Helper()
		if _, err := mem.Put(ctx, key, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	confirm := func(what string) {
		t.Helper()
		for range 2 {
			if err := n.ConfirmLog(ctx); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	confirm("the installed record")
	l := *readLease(t, mem, "node_a")
	installed := l.Encode()
	l.ExpiresMs += 10_000
	put(l.Encode())
	confirm("a renewed record")
	put([]byte(`{"node":"node_a"}`))
	var re *layout.RecordError
	if err := n.ConfirmLog(ctx); !errors.As(err, &re) || n.FenceErr() != nil {
		t.Fatalf("ConfirmLog on a record that does not decode = %v (fenced: %v), want a *layout.RecordError and no fence", err, n.FenceErr())
	}
	put(installed)
	confirm("the installed record again")
	l.Log = &layout.NodeLog{State: layout.NodeLogRecovering, Epoch: 1, Ensemble: []string{}}
	put(l.Encode())
	var fe *FencedError
	if err := n.ConfirmLog(ctx); !errors.As(err, &fe) || fe.Reason != FenceLogClosed {
		t.Fatalf("ConfirmLog on a fenced record = %v, want *FencedError", err)
	}
	put(installed)
	if err := n.ConfirmLog(ctx); err == nil {
		t.Fatal("a fenced node's ConfirmLog succeeded")
	}
}

// The sweep recovers a dead node's open log and deletes the bundles of
// sealed and replaced sessions, never those of a live one — even one
// whose record appeared after the sweep listed the node records.
func TestSweepRecoversDeadLogsAndKeepsLiveOnes(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	folder := &recordingFolder{}
	dead := joinLogNode(t, mem, clk, "node_dead", folder)
	deadGen := dead.Generation()
	live := joinLogNode(t, mem, clk, "node_live", folder)
	put := func(key string) {
		if _, err := mem.Put(ctx, key, []byte("b"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put(layout.BundleKey("node_dead", deadGen, 1, 0))
	put(layout.BundleKey("node_live", live.Generation(), 1, 0))
	put(layout.BundleKey("node_live", "oldgen", 1, 3)) // a replaced session
	put(layout.BundleKey("node_gone", "g", 1, 0))      // no record at all
	dead.Kill()
	for i := 0; i < 4; i++ { // the live node's shell renews in time; the dead one's does not
		waitTimers(clk)
		clk.Advance(DefaultTTL / 3)
		want := uint64(clk.Now().Add(DefaultTTL / 2).UnixMilli())
		for deadline := time.Now().Add(5 * time.Second); readLease(t, mem, "node_live").ExpiresMs < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the live node did not renew")
			}
		}
	}
	// A node that starts while the sweep runs: its record and first
	// bundle appear while the sweep lists the node's sessions (an old,
	// recovered session of it is there already).
	put(layout.BundleKey("node_new", "gold", 1, 9))
	newLease := layout.NodeLease{Node: "node_new", ExpiresMs: uint64(clk.Now().Add(time.Hour).UnixMilli()), OwnershipIndexGeneration: "gnew", Log: layout.OpenNodeLog(1)}
	ls := &listHook{Store: mem, on: func(prefix string) {
		if prefix == layout.NodeLogsPrefix("node_new") {
			mem.Put(ctx, layout.NodeKey("node_new"), newLease.Encode(), store.PutOptions{})
			put(layout.BundleKey("node_new", "gnew", 1, 0))
		}
	}}
	sweeper := joinLogNode(t, ls, clk, "node_s", folder)
	if err := sweeper.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if folder.count() != 1 || readLease(t, mem, "node_dead").Log.State != layout.NodeLogSealed {
		t.Fatalf("dead log not recovered: folds %v", folder.folded)
	}
	for key, kept := range map[string]bool{
		layout.BundleKey("node_dead", deadGen, 1, 0):           false,
		layout.BundleKey("node_live", live.Generation(), 1, 0): true,
		layout.BundleKey("node_live", "oldgen", 1, 3):          false,
		layout.BundleKey("node_gone", "g", 1, 0):               false,
		layout.BundleKey("node_new", "gnew", 1, 0):             true,
		layout.BundleKey("node_new", "gold", 1, 9):             false,
	} {
		_, err := mem.Get(ctx, key)
		if (err == nil) != kept {
			t.Errorf("%s: kept=%v, want %v", key, err == nil, kept)
		}
	}
}

// Close seals the node's log, then deletes its lease.
func TestCloseSealsTheLog(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	var sealedSeen atomic.Bool
	rs := &watchStore{Store: mem, put: func(key string, data []byte) {
		if key == layout.NodeKey("node_a") && strings.Contains(string(data), `"state":"sealed"`) {
			sealedSeen.Store(true)
		}
	}}
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n := joinLogNode(t, rs, clk, "node_a", &recordingFolder{})
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !sealedSeen.Load() {
		t.Fatal("the log was not sealed before the lease was deleted")
	}
	if l := readLease(t, mem, "node_a"); l != nil {
		t.Fatalf("lease left after Close: %+v", l)
	}
}

type listHook struct {
	store.Store
	once sync.Once
	on   func(prefix string)
}

func (l *listHook) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if opts.Prefix == layout.NodeLogsPrefix("node_new") {
		l.once.Do(func() { l.on(opts.Prefix) })
	}
	return l.Store.List(ctx, opts)
}

type watchStore struct {
	store.Store
	put func(key string, data []byte)
}

func (w *watchStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	v, err := w.Store.Put(ctx, key, data, opts)
	if err == nil {
		w.put(key, data)
	}
	return v, err
}
