package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// The seeded simulation of the ownership protocol. Several nodes share one
// bucket that fails, drops and loses responses at random; each node has its
// own clock, off true time by a drift below the fence margin; nodes pause
// (SIGSTOP) — also in the middle of a request, between the bucket applying
// it and the node reading the answer — and resume with their renewal
// completing before or after their deadline timer runs; they lose the
// bucket for their lease renewals, crash and restart, close gracefully; a
// node that self-fenced is restarted, as its supervisor would. Everything
// runs on the simulator's thread, so a seed replays exactly. Invariants:
//
//   - one writer per epoch: no (cell, epoch) is ever granted twice;
//   - no lost acknowledged write: no write acknowledged under epoch e at
//     true time t while some later epoch of the cell had already been
//     granted before t (the new owner restored without it);
//   - an expired lease never comes back: a crashed or self-fenced node's lease is never
//     renewed again;
//   - ownership settles: once faults stop, some node takes every cell;
//   - and, against the cell's log (sim_log_test.go, with stale records,
//     lost snapshots and colliding log objects): no epoch granted that
//     already holds files, one writer per epoch's files, no restore from a
//     chain that combines epochs.
//
// go test -run TestSimulation -sim.seeds=100000 runs a long mode;
// -sim.seed=N replays one seed.
var (
	simSeeds = flag.Int("sim.seeds", 0, "number of simulation seeds (default 10000, or CELLB_SIM_SEEDS)")
	simSeed  = flag.Int64("sim.seed", -1, "replay only this seed")
)

const (
	simTTL    = 10 * time.Second
	simMargin = 2 * time.Second
	simCells  = 2
)

type simNode struct {
	name    string
	node    *driven
	clk     *simClock
	offset  time.Duration // node clock = true time + offset
	paused  bool          // SIGSTOP: its clock stops, it does nothing
	crashed bool
	booting bool // inside join: no pause inside its requests
	grants  map[string]lease.Grant
	logs    map[string]*simLog // the cells whose log this node has open
}

// down reports whether the node must be restarted: it crashed, or it
// self-fenced (a fenced node never serves again).
func (n *simNode) down() bool {
	return n.crashed || n.node == nil || n.node.FenceErr() != nil
}

// simClock is a node's clock: a fake clock whose AfterFunc callbacks the
// simulator may hold back while it resumes the node, so that the node's
// renewal completes before its deadline timer runs, as in a real process
// resumed from SIGSTOP whose goroutines run in any order.
type simClock struct {
	*clock.Fake
	hold bool
	held []func()
}

func (c *simClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.Fake.AfterFunc(d, func() {
		if c.hold {
			c.held = append(c.held, f)
			return
		}
		f()
	})
}

// release runs the held callbacks and stops holding.
func (c *simClock) release() {
	held := c.held
	c.hold, c.held = false, nil
	for _, f := range held {
		f()
	}
}

// simStore is a node's view of the bucket. After the bucket answered a
// read of another node's lease or a write of an ownership record, the node may be
// paused before it reads the answer: the world moves on past its TTL (other
// nodes renew, take cells), then the node resumes with an old answer.
type simStore struct {
	w *world
	n *simNode
}

func (s simStore) Get(ctx context.Context, key string) (*store.Object, error) {
	obj, err := s.w.fs.Get(ctx, key)
	// Another node's lease (its own is read back inside a renewal, and
	// renewals do not overlap).
	if strings.HasPrefix(key, "nodes/") && key != layout.NodeKey(s.n.name) {
		s.w.maybePauseInside(s.n, "reading "+key)
	}
	return obj, err
}

func (s simStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	v, err := s.w.fs.Put(ctx, key, data, opts)
	if strings.HasSuffix(key, "/own.json") {
		s.w.maybePauseInside(s.n, "writing "+key)
	}
	return v, err
}

func (s simStore) Delete(ctx context.Context, key string) error { return s.w.fs.Delete(ctx, key) }

func (s simStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	return s.w.fs.List(ctx, opts)
}

type simGrant struct {
	node     string
	epoch    uint64
	acquired time.Duration // true time
}

type simAck struct {
	cell  string
	node  string
	epoch uint64
	at    time.Duration
}

type world struct {
	seed    uint64
	r       *rand.Rand
	now     time.Duration // true time since start
	start   time.Time
	fs      *faultstore.Store
	nodes   []*simNode
	variant simVariant
	granted map[string][]simGrant // per cell
	// The log model (sim_log_test.go): who wrote each file and each
	// epoch's files, and records the operator put back below their epoch.
	files       map[string]simFile
	epochWriter map[string]string
	lowered     map[string]uint64
	acks        []simAck
	lapsed      map[string]uint64 // crashed or fenced node -> its lease's expires_ms then
	trace       []string

	t        simT     // the run's test, for steps taken inside a pause
	inside   *simNode // the node paused inside a request, if any
	settling bool     // no more pauses
}

func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%8.3fs ", w.now.Seconds())+fmt.Sprintf(format, args...))
}

func cellName(i int) string { return "Sim:c" + strconv.Itoa(i) }

func newWorld(seed uint64, v simVariant) *world {
	r := rand.New(rand.NewPCG(seed, 0x51ed))
	w := &world{
		seed: seed, r: r, start: time.UnixMilli(1_800_000_000_000), variant: v,
		granted: map[string][]simGrant{}, lapsed: map[string]uint64{},
		files: map[string]simFile{}, epochWriter: map[string]string{}, lowered: map[string]uint64{},
	}
	w.fs = faultstore.New(memstore.New(), faultstore.Config{Seed: seed, PerOp: map[faultstore.Op]faultstore.Faults{
		faultstore.OpPut: {Fail: 0.05, Drop: 0.03, LoseResponse: 0.05},
		faultstore.OpGet: {Fail: 0.03},
	}})
	for i := 0; i < 3; i++ {
		w.nodes = append(w.nodes, &simNode{name: "node_" + strconv.Itoa(i)})
	}
	return w
}

func (w *world) nodeClock(n *simNode) time.Time { return w.start.Add(w.now + n.offset) }

// boot starts (or restarts after a crash) a node.
func (w *world) boot(n *simNode) {
	if n.node != nil && !n.crashed {
		n.node.Kill() // a fenced node's supervisor restarts it
	}
	n.offset = time.Duration(w.r.Int64N(int64(simMargin))) - simMargin/2
	n.clk = &simClock{Fake: clock.NewFake(w.nodeClock(n))}
	// A new process under the same id may legitimately revive the lease,
	// even when its join then fails half-way.
	delete(w.lapsed, n.name)
	n.booting = true
	node, err := newDriven(context.Background(), Options{
		Store: simStore{w: w, n: n}, Node: n.name, Clock: n.clk, Logger: quiet, TTL: simTTL, FenceMargin: simMargin,
		Rand: seeded{rand.New(rand.NewPCG(w.seed, uint64(len(w.trace))))},
	}, w.variant.rules())
	n.booting = false
	if err != nil {
		w.logf("%s failed to join: %v", n.name, err)
		n.node, n.crashed = nil, true
		return
	}
	n.node, n.crashed, n.paused, n.grants, n.logs = node, false, false, map[string]lease.Grant{}, map[string]*simLog{}
	w.logf("%s joined (offset %v)", n.name, n.offset)
}

// advance moves true time; running nodes' clocks follow and renew, a
// second at a time at most, so a running node renews before its deadline.
func (w *world) advance(d time.Duration) {
	for d > 0 {
		inc := min(d, time.Second)
		d -= inc
		w.now += inc
		for _, n := range w.nodes {
			if n.node == nil || n.crashed || n.paused {
				continue
			}
			n.clk.Set(w.nodeClock(n))
			n.node.renewDue()
		}
	}
}

// resume wakes a paused node: its clock jumps to now; its renewal and its
// deadline timer, both due, run in either order.
func (w *world) resume(n *simNode) {
	n.paused = false
	renewFirst := w.r.IntN(2) == 0
	n.clk.hold = renewFirst
	n.clk.Set(w.nodeClock(n))
	n.node.renewDue()
	n.clk.release()
	w.logf("%s resumed (renewal first: %v)", n.name, renewFirst)
}

// maybePauseInside pauses n, sometimes, between the bucket answering one of
// its requests and n reading the answer: past its TTL, while the others go
// on.
func (w *world) maybePauseInside(n *simNode, what string) {
	if w.settling || w.inside != nil || n.booting || n.paused || n.down() || w.r.IntN(4) != 0 {
		return
	}
	w.inside, n.paused = n, true
	w.logf("%s paused after %s", n.name, what)
	w.advance(simTTL + time.Duration(w.r.IntN(3000))*time.Millisecond)
	for i := 0; i < 3+w.r.IntN(6); i++ {
		w.step(w.t)
	}
	w.inside = nil
	w.resume(n)
}

func (w *world) step(t simT) {
	if w.r.IntN(100) < 4 {
		w.operatorFault()
		return
	}
	n := w.nodes[w.r.IntN(len(w.nodes))]
	cell := cellName(w.r.IntN(simCells))
	ctx := context.Background()
	if n == w.inside {
		// Paused inside a request; only time passes.
		w.advance(time.Duration(50+w.r.IntN(2500)) * time.Millisecond)
		return
	}
	switch k := w.r.IntN(100); {
	case k < 30:
		w.advance(time.Duration(50+w.r.IntN(2500)) * time.Millisecond)
	case n.down():
		if k < 45 {
			w.boot(n)
		}
	case n.paused:
		if k < 50 {
			w.resume(n)
		}
	case k < 50:
		g, err := n.node.TryAcquire(ctx, cell)
		if err != nil {
			w.logf("%s take %s: %v", n.name, cell, err)
			return
		}
		w.granting(t, cell, n.name, g)
		n.grants[cell] = g
		w.logf("%s took %s epoch %d", n.name, cell, g.Epoch())
		w.openLog(t, n, cell, g)
	case k < 75:
		g := n.grants[cell]
		if g == nil || !w.upload(n, cell) {
			return
		}
		// The self-fence alone must keep acknowledgements safe, and so
		// must the fence with celld's re-read of own.json.
		check := g.CheckWrite
		if w.r.IntN(2) == 0 {
			check = func() error { return lease.CheckAck(ctx, g) }
		}
		if err := check(); err != nil {
			w.logf("%s write %s refused: %v", n.name, cell, err)
			return
		}
		w.acks = append(w.acks, simAck{cell: cell, node: n.name, epoch: g.Epoch(), at: w.now})
		w.checkAck(t, w.acks[len(w.acks)-1])
	case k < 80:
		if g := n.grants[cell]; g != nil {
			err := g.Release(ctx)
			delete(n.grants, cell)
			w.logf("%s released %s: %v", n.name, cell, err)
		}
	case k < 85:
		n.paused = true
		w.logf("%s paused", n.name)
	case k < 89:
		// The bucket becomes unreachable for this node's renewals for a while.
		w.fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: layout.NodeKey(n.name), Fault: faultstore.Fail, Times: 2 + w.r.IntN(6)})
		w.logf("%s cut off from its lease for a while", n.name)
	case k < 95:
		if obj, err := w.fs.Inner().Get(ctx, layout.NodeKey(n.name)); err == nil {
			if l, err := layout.DecodeNodeLease(layout.NodeKey(n.name), obj.Data); err == nil {
				w.lapsed[n.name] = l.ExpiresMs
			}
		}
		n.node.Kill()
		n.crashed = true
		w.logf("%s crashed", n.name)
	default:
		// Close releases the node's cells concurrently, in no fixed
		// order; on the simulator's thread, one at a time in the order
		// of their names, they stay a function of the seed.
		for _, g := range heldGrants(n.node.Node) {
			w.logf("%s releasing %s: %v", n.name, g.cell, g.Release(ctx))
		}
		err := n.node.Close(ctx)
		n.crashed = true
		w.logf("%s closed: %v", n.name, err)
	}
}

// checkAck: the write must not come after a later epoch was granted.
func (w *world) checkAck(t simT, a simAck) {
	for _, g := range w.granted[a.cell] {
		if g.epoch > a.epoch && g.acquired <= a.at {
			t.Fatalf("seed %d: %s acknowledged a write to %s under epoch %d at %v, but epoch %d was granted to %s at %v: that write is lost\n%s",
				w.seed, a.node, a.cell, a.epoch, a.at, g.epoch, g.node, g.acquired, w.dump())
		}
	}
}

// checkWorld: crashed and fenced nodes' leases never come back; own.json
// epochs grow.
func (w *world) checkWorld(t simT, lastEpoch map[string]uint64) {
	ctx := context.Background()
	for _, n := range w.nodes {
		if _, seen := w.lapsed[n.name]; seen || n.crashed || n.node == nil || n.node.FenceErr() == nil {
			continue
		}
		if obj, err := w.fs.Inner().Get(ctx, layout.NodeKey(n.name)); err == nil {
			if l, err := layout.DecodeNodeLease(layout.NodeKey(n.name), obj.Data); err == nil {
				w.lapsed[n.name] = l.ExpiresMs
			}
		}
	}
	// A live owner keeps its cells: while a running node's deadline has not
	// passed by its own clock, own.json still names it, at each grant's
	// epoch or later (others see its lease expire only after that deadline).
	for _, n := range w.nodes {
		if n.down() || n.paused {
			continue
		}
		n.node.mu.Lock()
		live := n.node.clock.Now().Before(n.node.deadline)
		grants := make([]*grant, 0, len(n.node.grants))
		for _, g := range n.node.grants {
			grants = append(grants, g)
		}
		n.node.mu.Unlock()
		for _, g := range grants {
			if !live || g.Err() != nil {
				continue
			}
			obj, err := w.fs.Inner().Get(ctx, layout.OwnKey(g.cell))
			if err != nil {
				t.Fatalf("seed %d: %s holds %s epoch %d, but own.json is gone: %v\n%s", w.seed, n.name, g.cell, g.epoch, err, w.dump())
			}
			// (A later epoch of its own is an ambiguous re-take of its own
			// whose answer it never read.)
			if rec, err := layout.DecodeOwnRecord("", obj.Data); err != nil || rec.Node != n.name || rec.Epoch < g.epoch {
				t.Fatalf("seed %d: live %s's cell %s (epoch %d) was taken: own.json is %s\n%s", w.seed, n.name, g.cell, g.epoch, obj.Data, w.dump())
			}
		}
	}
	for name, exp := range w.lapsed {
		obj, err := w.fs.Inner().Get(ctx, layout.NodeKey(name))
		if err != nil {
			continue
		}
		var l struct {
			ExpiresMs uint64 `json:"expires_ms"`
		}
		if err := json.Unmarshal(obj.Data, &l); err == nil && l.ExpiresMs > exp {
			t.Fatalf("seed %d: crashed %s's lease came back (expires_ms %d > %d)\n%s", w.seed, name, l.ExpiresMs, exp, w.dump())
		}
	}
	for cell, e := range w.lowered {
		lastEpoch[cell] = e // the operator put the record back on purpose
		delete(w.lowered, cell)
	}
	w.checkLogFiles(t)
	for i := 0; i < simCells; i++ {
		obj, err := w.fs.Inner().Get(ctx, layout.OwnKey(cellName(i)))
		if err != nil {
			continue
		}
		rec, err := layout.DecodeOwnRecord("", obj.Data)
		if err != nil {
			t.Fatalf("seed %d: own.json undecodable: %v", w.seed, err)
		}
		if rec.Epoch < lastEpoch[cellName(i)] {
			t.Fatalf("seed %d: %s epoch went down from %d to %d\n%s", w.seed, cellName(i), lastEpoch[cellName(i)], rec.Epoch, w.dump())
		}
		lastEpoch[cellName(i)] = rec.Epoch
	}
}

// settle stops the faults, resumes and restarts everyone, lets 3 TTLs pass,
// and expects every cell to be taken by someone.
func (w *world) settle(t simT) {
	w.settling = true
	w.fs.ClearScript()
	w.fs = faultstore.New(w.fs.Inner(), faultstore.Config{})
	for _, n := range w.nodes {
		if n.crashed {
			w.boot(n)
		} else if n.node != nil {
			n.paused = false
		}
	}
	for i := 0; i < 12; i++ {
		w.advance(simTTL / 4)
	}
	for _, n := range w.nodes {
		if n.down() {
			w.boot(n)
		}
	}
	ctx := context.Background()
	for c := 0; c < simCells; c++ {
		cell := cellName(c)
		taken := false
		for _, n := range w.nodes {
			if n.node == nil {
				continue
			}
			if g, err := n.node.TryAcquire(ctx, cell); err == nil {
				taken = true
				w.granting(t, cell, n.name, g)
				break
			} else if !errors.As(err, new(*lease.CellOwnedElsewhereError)) {
				w.logf("%s settle take %s: %v", n.name, cell, err)
			}
		}
		if !taken {
			t.Fatalf("seed %d: %s has no owner and nobody can take it after the faults stopped\n%s", w.seed, cell, w.dump())
		}
	}
	for _, n := range w.nodes {
		if n.node != nil {
			n.node.Kill()
		}
	}
}

func (w *world) dump() string {
	tail := w.trace
	if len(tail) > 60 {
		tail = tail[len(tail)-60:]
	}
	return "last events:\n  " + strings.Join(tail, "\n  ") + fmt.Sprintf("\nreplay: go test ./core/fleet -run TestSimulation -sim.seed=%d", w.seed)
}

func runSeed(t simT, seed uint64, steps int) {
	runVariant(t, seed, simVariant{}, steps)
}

func runVariant(t simT, seed uint64, v simVariant, steps int) {
	w := newWorld(seed, v)
	w.t = t
	for _, n := range w.nodes {
		w.boot(n)
	}
	last := map[string]uint64{}
	for i := 0; i < steps; i++ {
		w.step(t)
		w.checkWorld(t, last)
	}
	w.settle(t)
}

func seedCount() int {
	if *simSeeds > 0 {
		return *simSeeds
	}
	if v, err := strconv.Atoi(os.Getenv("CELLB_SIM_SEEDS")); err == nil && v > 0 {
		return v
	}
	return 10000
}

func TestSimulation(t *testing.T) {
	if *simSeed >= 0 {
		runSeed(t, uint64(*simSeed), 120)
		return
	}
	n := seedCount()
	if testing.Short() {
		n = 500
	}
	// Seeds are independent worlds: run them on every core. Each worker
	// stops its run at the first violation; the lowest failing seed is
	// reported, with the command that replays it.
	workers := runtime.GOMAXPROCS(0)
	var next atomic.Int64
	var mu sync.Mutex
	failedSeed, failedMsg := int64(-1), ""
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed := next.Add(1) - 1
				if seed >= int64(n) {
					return
				}
				mu.Lock()
				stop := failedSeed >= 0 && seed > failedSeed
				mu.Unlock()
				if stop {
					return
				}
				if msg := runVariantRecorded(uint64(seed), simVariant{}); msg != "" {
					mu.Lock()
					if failedSeed < 0 || seed < failedSeed {
						failedSeed, failedMsg = seed, msg
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if failedSeed >= 0 {
		t.Fatal(failedMsg)
	}
}

// runVariantRecorded runs one seed of a variant and returns its
// violation, or "".
func runVariantRecorded(seed uint64, v simVariant) (msg string) {
	ft := &failRecorder{}
	defer func() {
		if r := recover(); r != nil {
			if r != errSimFailed {
				panic(r)
			}
			msg = ft.msg
		}
	}()
	runVariant(ft, seed, v, 120)
	return ""
}

// TestSimulationCatchesBrokenVariants runs the same simulator over protocol
// variants that are wrong on purpose; each must be caught by some seed.
func TestSimulationCatchesBrokenVariants(t *testing.T) {
	variants := map[string]simVariant{
		"takes a live owner's cell": {acquire: func(s AcquireState) Action {
			a := DecideAcquire(s)
			if a.Kind == OwnedElsewhere {
				return Action{Kind: Swap, Record: layout.OwnRecord{Node: s.Self, Epoch: s.Own.Epoch + 1}, Cond: store.IfVersion(s.OwnVersion)}
			}
			return a
		}},
		"skips the self-fence": {unfenced: func(now, deadline time.Time) bool { return true }},
		"does not raise the epoch on a wake": {acquire: func(s AcquireState) Action {
			a := DecideAcquire(s)
			if a.Kind == Swap && s.Own.Node == s.Self {
				a.Record.Epoch = s.Own.Epoch
			}
			return a
		}},
	}
	for name, v := range variants {
		caught := false
		for seed := 0; seed < 2000 && !caught; seed++ {
			caught = runVariantRecorded(uint64(seed), v) != ""
		}
		if !caught {
			t.Errorf("broken variant %q passed 2000 seeds: the simulation cannot catch it", name)
		}
	}
}

// simT is what the simulator needs of a test: a way to stop at a violation.
type simT interface {
	Fatalf(format string, args ...any)
}

var errSimFailed = errors.New("simulation found a violation")

// failRecorder stops a run at its first violation without failing the
// enclosing test: the broken-variant test expects violations.
type failRecorder struct {
	failed bool
	msg    string
}

func (f *failRecorder) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = fmt.Sprintf(format, args...)
	panic(errSimFailed)
}
