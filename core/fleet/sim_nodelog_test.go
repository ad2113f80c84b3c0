package fleet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/page"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// The seeded simulation of the node log. Three nodes run the real
// ownership and recovery code (Node with Options.NodeLog: TryAcquire with
// its takeover interlock, ConfirmLog, recovery with core/nodelog's Fold,
// recovery before install, the sweep), on one bucket that fails, drops
// requests and loses responses; the node log's data path is modelled step
// for step as core/nodelog and core/ltxlog run it, on real bytes (CLB1
// bundles of real LTX files, restored by ltxlog.Restore):
//
//   - a client write commits on the cell's owner (taking the cell first,
//     which restores it from the bucket and uploads the epoch's snapshot
//     create-only, confirmed by a read of the node record);
//   - a flush puts every pending row of the node in one bundle, then
//     reads the node record (ConfirmLog) and, if it still shows the log
//     open, acknowledges the rows' writes (after the grant's CheckWrite, as
//     the runtime does before a reply);
//   - tiering writes a cell's credited rows into its prefix, merged, then
//     bundles whose rows are all covered are deleted;
//   - releasing a cell tiers its rows first; a node whose tiering fails
//     at a release fences itself;
//   - nodes pause (also between a bundle's PUT and its credit read, and
//     before a bundle's PUT, which then lands late), crash, restart under
//     the same id (recovering the previous session first), sweep, close.
//
// Invariant: no acknowledged write is lost. Every take restores the cell
// and must find every write acknowledged before it; once faults stop, a
// final take of every cell must too. Broken variants of the node log (no
// credit read, a credit read before the PUT, a release without tiering,
// bundles deleted before their rows are tiered, a take that skips the
// dead owner's recovery) must each be caught.
//
// go test ./core/fleet -run TestNodeLogSimulation -sim.seeds=1000000
// runs a long mode; -sim.seed=N replays one seed.

const (
	nlCells    = 3
	nlPageSize = 512
	nlMaxState = 48 // writes a cell's page holds
)

// nlVariant is a node log broken on purpose (the zero value is correct).
type nlVariant struct {
	skipConfirm     bool // credits a bundle without reading the node record
	confirmFirst    bool // reads the node record before the bundle's PUT
	releaseUntiered bool // releases a cell without tiering its rows
	gcEarly         bool // deletes a bundle once credited, before its rows are tiered
	noRecovery      bool // takes a dead owner's cell without recovering its log
}

// rules: celld's, or, for noClockFence worlds, a node that never fences
// by its own clock (only a replaced lease or a closed log fences it): the
// credit read alone must then keep acknowledgements safe.
func (v nlVariant) rules(noClockFence bool) rules {
	r := celldRules()
	if noClockFence {
		r.unfenced = func(now, deadline time.Time) bool { return true }
	}
	if v.noRecovery {
		r.acquire = func(s AcquireState) Action {
			if s.OwnerLease != nil && s.OwnerLease.Log.NeedsRecovery() && !s.OwnerLease.Live(s.NowMs) {
				lg := *s.OwnerLease
				lg.Log = nil
				s.OwnerLease = &lg
			}
			return DecideAcquire(s)
		}
	}
	return r
}

type nlRow struct {
	epoch uint64
	txid  ltx.TXID
	data  []byte
	write uint64
}

type nlCellState struct {
	grant    lease.Grant
	epoch    uint64
	txid     ltx.TXID
	state    []uint64
	pending  []nlRow
	untiered []nlRow
}

type nlNode struct {
	// lateRenewal: the node resumed inside its flush, which runs before
	// its renewal and deadline timers do (finishResume runs them).
	lateRenewal bool
	name        string
	node        *driven
	clk         *simClock
	offset      time.Duration
	paused      bool
	crashed     bool
	booting     bool
	cells       map[string]*nlCellState
	seq         uint64
	// bundles: credited bundles not yet deleted, with each cell epoch's
	// highest TXID in them (core/nodelog's coverage).
	bundles map[string]map[nlKey]ltx.TXID
}

type nlKey struct {
	cell  string
	epoch uint64
}

func (n *nlNode) down() bool { return n.crashed || n.node == nil || n.node.FenceErr() != nil }

type nlAck struct {
	cell  string
	write uint64
	node  string
	epoch uint64
	at    time.Duration
}

type nlWorld struct {
	// noClockFence: nodes never fence by their clocks (odd seeds).
	noClockFence bool
	seed         uint64
	r            *rand.Rand
	now          time.Duration
	start        time.Time
	fs           *faultstore.Store
	nodes        []*nlNode
	v            nlVariant
	next         uint64 // next write id
	acks         []nlAck
	trace        []string
	t            simT
	inside       *nlNode
	settling     bool
}

// nlStore is a node's view of the bucket: the node may be paused between
// the bucket answering a read of another node's lease, or a write of an
// ownership record, and reading the answer.
type nlStore struct {
	w *nlWorld
	n *nlNode
}

func (s nlStore) Get(ctx context.Context, key string) (*store.Object, error) {
	obj, err := s.w.fs.Get(ctx, key)
	if strings.HasPrefix(key, layout.NodesPrefix) && key != layout.NodeKey(s.n.name) {
		s.w.maybePauseInside(s.n, "reading "+key)
	}
	return obj, err
}

func (s nlStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	v, err := s.w.fs.Put(ctx, key, data, opts)
	if strings.HasSuffix(key, "/own.json") {
		s.w.maybePauseInside(s.n, "writing "+key)
	}
	return v, err
}

func (s nlStore) Delete(ctx context.Context, key string) error { return s.w.fs.Delete(ctx, key) }

func (s nlStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	return s.w.fs.List(ctx, opts)
}

func (w *nlWorld) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%8.3fs ", w.now.Seconds())+fmt.Sprintf(format, args...))
}

func nlCell(i int) string { return "Sim:n" + strconv.Itoa(i) }

func newNLWorld(seed uint64, v nlVariant) *nlWorld {
	w := &nlWorld{seed: seed, r: rand.New(rand.NewPCG(seed, 0x10c)), start: time.UnixMilli(1_800_000_000_000), v: v, noClockFence: seed%2 == 1}
	w.fs = faultstore.New(memstore.New(), faultstore.Config{Seed: seed, PerOp: map[faultstore.Op]faultstore.Faults{
		faultstore.OpPut: {Fail: 0.04, Drop: 0.02, LoseResponse: 0.04},
		faultstore.OpGet: {Fail: 0.02},
	}})
	for i := 0; i < 3; i++ {
		w.nodes = append(w.nodes, &nlNode{name: "node_" + strconv.Itoa(i)})
	}
	return w
}

func (w *nlWorld) nodeClock(n *nlNode) time.Time { return w.start.Add(w.now + n.offset) }

func (w *nlWorld) boot(n *nlNode) {
	if n.node != nil && !n.crashed {
		n.node.Kill()
	}
	n.offset = time.Duration(w.r.Int64N(int64(simMargin))) - simMargin/2
	n.clk = &simClock{Fake: clock.NewFake(w.nodeClock(n))}
	n.booting = true
	view := nlStore{w: w, n: n}
	folder := nlFolder{nodelog.StoreFolder{Store: view, Opts: nodelog.FoldOptions{Logger: quiet, Retries: -1, Concurrency: 1}}}
	node, err := newDriven(context.Background(), Options{
		Store: view, Node: n.name, Clock: n.clk, Logger: quiet, TTL: simTTL, FenceMargin: simMargin,
		NodeLog: true, Folder: folder, RecoveryWait: -1, SweepInterval: -1,
		Rand: seeded{rand.New(rand.NewPCG(w.seed, uint64(len(w.trace))))},
	}, w.v.rules(w.noClockFence))
	n.booting = false
	if err != nil {
		w.logf("%s failed to join: %v", n.name, err)
		n.node, n.crashed = nil, true
		return
	}
	n.node, n.crashed, n.paused = node, false, false
	n.cells, n.bundles, n.seq = map[string]*nlCellState{}, map[string]map[nlKey]ltx.TXID{}, 0
	w.logf("%s joined, generation %.8s", n.name, node.Generation())
}

type nlFolder struct{ f nodelog.StoreFolder }

func (f nlFolder) FoldLog(ctx context.Context, node, gen string) error {
	_, err := f.f.Fold(ctx, node, gen)
	return err
}

func (w *nlWorld) advance(d time.Duration) {
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

func (w *nlWorld) resume(n *nlNode) {
	n.paused = false
	renewFirst := w.r.IntN(2) == 0
	n.clk.hold = renewFirst
	n.clk.Set(w.nodeClock(n))
	n.node.renewDue()
	n.clk.release()
	w.logf("%s resumed (renewal first: %v)", n.name, renewFirst)
}

// pauseHere pauses n past its TTL while the others go on, then resumes
// it; with flushFirst, the flush it was paused in goes on before its
// renewal and deadline timers run (goroutines resume in any order).
func (w *nlWorld) pauseHere(n *nlNode, what string, flushFirst bool) {
	w.inside, n.paused = n, true
	w.logf("%s paused %s", n.name, what)
	w.advance(simTTL + time.Duration(w.r.IntN(3000))*time.Millisecond)
	for i := 0; i < 3+w.r.IntN(6); i++ {
		w.step()
	}
	w.inside = nil
	if !flushFirst {
		w.resume(n)
		return
	}
	n.paused, n.lateRenewal = false, true
	n.clk.hold = true
	n.clk.Set(w.nodeClock(n))
	w.logf("%s resumed (its flush first)", n.name)
}

// finishResume runs the renewal and timers a flush-first resume held.
func (w *nlWorld) finishResume(n *nlNode) {
	if !n.lateRenewal {
		return
	}
	n.lateRenewal = false
	n.node.renewDue()
	n.clk.release()
}

func (w *nlWorld) maybePauseInside(n *nlNode, what string) {
	if w.settling || w.inside != nil || n.booting || n.paused || n.down() || w.r.IntN(4) != 0 {
		return
	}
	w.pauseHere(n, "after "+what, false)
}

// maybePause pauses n at a point of the node log's data path, sometimes.
func (w *nlWorld) maybePause(n *nlNode, what string, oneIn int) {
	if w.settling || w.inside != nil || n.paused || n.down() || w.r.IntN(oneIn) != 0 {
		return
	}
	w.pauseHere(n, what, w.r.IntN(2) == 0)
}

// encodeState is an LTX file of one page holding the cell's writes.
func encodeState(txid ltx.TXID, state []uint64, at int64) []byte {
	pg := make([]byte, nlPageSize)
	binary.LittleEndian.PutUint32(pg[100:], uint32(len(state)))
	for i, x := range state {
		binary.LittleEndian.PutUint64(pg[104+8*i:], x)
	}
	data, err := ltx.Encode(ltx.Header{PageSize: nlPageSize, Commit: 1, MinTXID: txid, MaxTXID: txid, Timestamp: at}, []page.Page{{Pgno: 1, Data: pg}})
	if err != nil {
		panic(err)
	}
	return data
}

func decodeState(image []byte) []uint64 {
	if len(image) < nlPageSize {
		return nil
	}
	n := binary.LittleEndian.Uint32(image[100:])
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(image[104+8*i:])
	}
	return out
}

// restore is what a cell's activation reads: its prefix's newest chain.
func (w *nlWorld) restore(s store.Store, cell string, overlay bool) ([]uint64, error) {
	opts := ltxlog.RestoreOptions{}
	if overlay {
		opts = ltxlog.WithOverlay(s, cell, opts)
	}
	res, err := ltxlog.Restore(context.Background(), s, cell, opts)
	if errors.Is(err, ltxlog.ErrNothingToRestore) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeState(res.Image), nil
}

// checkRestored: every write acknowledged before the restore (the first
// acked of w.acks) is in state.
func (w *nlWorld) checkRestored(cell string, state []uint64, acked int, who string) {
	have := map[uint64]bool{}
	for _, x := range state {
		have[x] = true
	}
	for _, a := range w.acks[:acked] {
		if a.cell == cell && !have[a.write] {
			w.t.Fatalf("seed %d: write %d to %s, acknowledged by %s under epoch %d at %v, is missing from %s's restore (%v): an acknowledged write is lost\n%s",
				w.seed, a.write, cell, a.node, a.epoch, a.at, who, state, w.dump())
		}
	}
}

// take takes a cell for n: the grant, the restore, the epoch's snapshot.
func (w *nlWorld) take(n *nlNode, cell string) *nlCellState {
	ctx := context.Background()
	g, err := n.node.TryAcquire(ctx, cell)
	if err != nil {
		w.logf("%s take %s: %v", n.name, cell, err)
		return nil
	}
	view := nlStore{w: w, n: n}
	acked := len(w.acks)
	state, err := w.restore(view, cell, false)
	if err != nil {
		w.logf("%s restore %s epoch %d: %v", n.name, cell, g.Epoch(), err)
		g.Release(ctx)
		return nil
	}
	w.checkRestored(cell, state, acked, fmt.Sprintf("%s (epoch %d)", n.name, g.Epoch()))
	snap := encodeState(1, state, w.nodeClock(n).UnixMilli())
	if _, err := view.Put(ctx, ltx.Key(cell, g.Epoch(), 0, 1, 1), snap, store.PutOptions{Condition: store.IfAbsent}); err != nil {
		w.logf("%s snapshot %s epoch %d: %v", n.name, cell, g.Epoch(), err)
		g.Release(ctx)
		return nil
	}
	if n.down() || g.Err() != nil {
		return nil
	}
	c := &nlCellState{grant: g, epoch: g.Epoch(), txid: 1, state: state}
	n.cells[cell] = c
	w.logf("%s took %s epoch %d with %d writes", n.name, cell, g.Epoch(), len(state))
	return c
}

// write commits one client write on n (taking the cell if needed).
func (w *nlWorld) write(n *nlNode, cell string) {
	c := n.cells[cell]
	if c != nil && c.grant.Err() != nil {
		delete(n.cells, cell)
		c = nil
	}
	if c == nil {
		if c = w.take(n, cell); c == nil {
			return
		}
	}
	if len(c.state) >= nlMaxState || n.down() {
		return
	}
	w.next++
	c.state = append(slices.Clip(c.state), w.next)
	c.txid++
	c.pending = append(c.pending, nlRow{epoch: c.epoch, txid: c.txid, data: encodeState(c.txid, c.state, w.nodeClock(n).UnixMilli()), write: w.next})
	w.logf("%s committed write %d to %s (epoch %d, TXID %d)", n.name, w.next, cell, c.epoch, c.txid)
}

func (n *nlNode) cellNames() []string {
	names := make([]string, 0, len(n.cells))
	for name := range n.cells {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// flush is core/nodelog's flush: one bundle of every pending row, then the
// credit.
func (w *nlWorld) flush(n *nlNode) {
	defer w.finishResume(n)
	ctx := context.Background()
	type held struct {
		cell string
		c    *nlCellState
		rows []nlRow
	}
	var taken []held
	var entries []ltx.BundleEntry
	for _, name := range n.cellNames() {
		c := n.cells[name]
		if len(c.pending) == 0 {
			continue
		}
		taken = append(taken, held{name, c, c.pending})
		for _, r := range c.pending {
			entries = append(entries, ltx.BundleEntry{Cell: name, CellEpoch: r.epoch, TXID: r.txid, Data: r.data})
		}
		c.pending = nil
	}
	if len(taken) == 0 {
		return
	}
	key := layout.BundleKey(n.name, n.node.Generation(), 1, n.seq)
	n.seq++
	var confirmed error
	if w.v.confirmFirst {
		confirmed = n.node.ConfirmLog(ctx)
	}
	w.maybePause(n, "before putting "+key, 8) // the bundle lands late
	if n.down() {
		// A node that fenced while paused never puts it (core/nodelog
		// checks first); but its PUT may have been on the wire already.
		if w.r.IntN(2) == 0 {
			w.fs.Inner().Put(ctx, key, mustBundle(entries), store.PutOptions{})
			w.logf("%s's late bundle %s landed", n.name, key)
		}
		return
	}
	_, err := nlStore{w: w, n: n}.Put(ctx, key, mustBundle(entries), store.PutOptions{})
	if err == nil {
		w.maybePause(n, "after putting "+key, 6) // a seal races the credit
		if !w.v.confirmFirst && !w.v.skipConfirm {
			confirmed = n.node.ConfirmLog(ctx)
		}
		err = confirmed
	}
	// The runtime checks the grant (CheckWrite) before a reply leaves;
	// half the time the model leaves it out, so that the credit read
	// alone is shown to keep acknowledgements safe.
	checkGrant := w.r.IntN(2) == 0
	if err != nil {
		w.logf("%s bundle %s not credited: %v", n.name, key, err)
		for _, h := range taken {
			w.reset(n, h.cell, h.c)
		}
		return
	}
	maxes := map[nlKey]ltx.TXID{}
	for _, h := range taken {
		for _, r := range h.rows {
			k := nlKey{h.cell, r.epoch}
			maxes[k] = max(maxes[k], r.txid)
		}
	}
	n.bundles[key] = maxes
	for _, h := range taken {
		h.c.untiered = append(h.c.untiered, h.rows...)
		if checkGrant {
			if err := h.c.grant.CheckWrite(); err != nil {
				w.logf("%s write to %s refused: %v", n.name, h.cell, err)
				continue
			}
		}
		for _, r := range h.rows {
			w.acks = append(w.acks, nlAck{cell: h.cell, write: r.write, node: n.name, epoch: r.epoch, at: w.now})
		}
	}
	w.logf("%s bundle %s credited (%d rows)", n.name, key, len(entries))
	if w.v.gcEarly {
		for _, name := range []string{key} {
			w.fs.Inner().Delete(ctx, name)
			delete(n.bundles, name)
		}
	}
}

func mustBundle(entries []ltx.BundleEntry) []byte {
	b, err := ltx.EncodeBundle(entries)
	if err != nil {
		panic(err)
	}
	return b
}

// tier is core/ltxlog's tier: the cell's credited rows into its prefix.
func (w *nlWorld) tier(n *nlNode, cell string, c *nlCellState) error {
	if len(c.untiered) == 0 {
		return nil
	}
	if n.node.FenceErr() != nil {
		return nodelog.ErrFenced
	}
	files := make([][]byte, len(c.untiered))
	for i, r := range c.untiered {
		files[i] = r.data
	}
	data, h, err := ltx.MergeFiles(files)
	if err != nil {
		w.t.Fatalf("seed %d: merge: %v", w.seed, err)
	}
	key := ltx.Key(cell, c.epoch, 0, h.MinTXID, h.MaxTXID)
	if _, err := (nlStore{w: w, n: n}).Put(context.Background(), key, data, store.PutOptions{}); err != nil {
		return err
	}
	c.untiered = nil
	w.covered(n, nlKey{cell, c.epoch}, h.MaxTXID)
	w.logf("%s tiered %s TXIDs %d-%d", n.name, cell, h.MinTXID, h.MaxTXID)
	return nil
}

// covered deletes the bundles whose every row is now covered.
func (w *nlWorld) covered(n *nlNode, k nlKey, txid ltx.TXID) {
	for key, maxes := range n.bundles {
		if m, ok := maxes[k]; ok && m <= txid {
			delete(maxes, k)
		}
		if len(maxes) == 0 {
			if err := (nlStore{w: w, n: n}).Delete(context.Background(), key); err == nil {
				delete(n.bundles, key)
			}
		}
	}
}

// reset is a cell's reset: its credited rows tiered, then its record
// released (core/ltxlog's Close, then the runtime's release).
func (w *nlWorld) reset(n *nlNode, cell string, c *nlCellState) {
	delete(n.cells, cell)
	w.releaseCell(n, cell, c)
}

func (w *nlWorld) releaseCell(n *nlNode, cell string, c *nlCellState) {
	if !w.v.releaseUntiered {
		if err := w.tier(n, cell, c); err != nil {
			if !errors.Is(err, nodelog.ErrFenced) {
				n.node.Fence("tiering failed at release")
				w.logf("%s fenced: %s could not be tiered before its release: %v", n.name, cell, err)
			}
			return // fenced: no release; the node's recoverer folds the rows
		}
	}
	c.untiered = nil
	w.covered(n, nlKey{cell, c.epoch}, ltx.TXID(1<<62))
	err := c.grant.Release(context.Background())
	w.logf("%s released %s epoch %d: %v", n.name, cell, c.epoch, err)
}

func (w *nlWorld) step() {
	n := w.nodes[w.r.IntN(len(w.nodes))]
	cell := nlCell(w.r.IntN(nlCells))
	ctx := context.Background()
	if n == w.inside {
		w.advance(time.Duration(50+w.r.IntN(2500)) * time.Millisecond)
		return
	}
	switch k := w.r.IntN(100); {
	case k < 22:
		w.advance(time.Duration(50+w.r.IntN(2500)) * time.Millisecond)
	case n.down():
		if k < 40 {
			w.boot(n)
		}
	case n.paused:
		if k < 45 {
			w.resume(n)
		}
	case k < 52:
		w.write(n, cell)
	case k < 68:
		w.flush(n)
	case k < 74:
		if c := n.cells[cell]; c != nil {
			if err := w.tier(n, cell, c); err != nil {
				w.logf("%s tier %s: %v", n.name, cell, err)
			}
		}
	case k < 79:
		if c := n.cells[cell]; c != nil && len(c.pending) == 0 {
			delete(n.cells, cell)
			w.releaseCell(n, cell, c)
		}
	case k < 83:
		n.paused = true
		w.logf("%s paused", n.name)
	case k < 86:
		w.fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: layout.NodeKey(n.name), Fault: faultstore.Fail, Times: 2 + w.r.IntN(6)})
		w.logf("%s cut off from its lease for a while", n.name)
	case k < 91:
		n.node.Kill()
		n.crashed = true
		w.logf("%s crashed", n.name)
	case k < 95:
		err := n.node.Sweep(ctx)
		w.logf("%s swept: %v", n.name, err)
	default:
		w.closeNode(n)
	}
}

// closeNode is a graceful close: every cell flushed and released, the
// session's bundles deleted, the lease sealed and deleted.
func (w *nlWorld) closeNode(n *nlNode) {
	ctx := context.Background()
	w.flush(n)
	if n.down() {
		return
	}
	for _, name := range n.cellNames() {
		c := n.cells[name]
		delete(n.cells, name)
		w.releaseCell(n, name, c)
	}
	if n.node.FenceErr() == nil {
		view := nlStore{w: w, n: n}
		page, _ := store.ListAll(ctx, view, store.ListOptions{Prefix: layout.BundlePrefix(n.name, n.node.Generation())})
		for _, o := range page.Objects {
			view.Delete(ctx, o.Key)
		}
	}
	err := n.node.Close(ctx)
	n.crashed = true
	w.logf("%s closed: %v", n.name, err)
}

func (w *nlWorld) settle() {
	w.settling = true
	w.fs = faultstore.New(w.fs.Inner(), faultstore.Config{})
	for _, n := range w.nodes {
		if n.crashed {
			w.boot(n)
		} else if n.node != nil {
			n.paused = false
		}
	}
	for i := 0; i < 16; i++ {
		w.advance(simTTL / 4)
		for _, n := range w.nodes {
			if n.down() {
				w.boot(n)
			}
		}
	}
	// Every node flushes and lets its cells go; then each cell is taken
	// once more, and its restore must hold every acknowledged write.
	for _, n := range w.nodes {
		if !n.down() {
			w.flush(n)
		}
	}
	for _, n := range w.nodes {
		if n.down() {
			continue
		}
		for _, name := range n.cellNames() {
			c := n.cells[name]
			delete(n.cells, name)
			w.releaseCell(n, name, c)
		}
	}
	for i := 0; i < nlCells; i++ {
		cell := nlCell(i)
		taken := false
		for _, n := range w.nodes {
			if n.down() {
				continue
			}
			if c := w.take(n, cell); c != nil {
				taken = true
				break
			}
		}
		if !taken {
			w.t.Fatalf("seed %d: nobody can take %s after the faults stopped\n%s", w.seed, cell, w.dump())
		}
	}
	for _, n := range w.nodes {
		if n.node != nil {
			n.node.Kill()
		}
	}
}

func (w *nlWorld) dump() string {
	tail := w.trace
	if len(tail) > 80 {
		tail = tail[len(tail)-80:]
	}
	return "last events:\n  " + strings.Join(tail, "\n  ") + fmt.Sprintf("\nreplay: go test ./core/fleet -run TestNodeLogSimulation -sim.seed=%d", w.seed)
}

func runNodeLog(t simT, seed uint64, v nlVariant, steps int) {
	w := newNLWorld(seed, v)
	w.t = t
	for _, n := range w.nodes {
		w.boot(n)
	}
	for i := 0; i < steps; i++ {
		w.step()
	}
	w.settle()
}

func runNodeLogRecorded(seed uint64, v nlVariant) (msg string) {
	ft := &failRecorder{}
	defer func() {
		if r := recover(); r != nil {
			if r != errSimFailed {
				panic(r)
			}
			msg = ft.msg
		}
	}()
	runNodeLog(ft, seed, v, 150)
	return ""
}

func TestNodeLogSimulation(t *testing.T) {
	if *simSeed >= 0 {
		runNodeLog(t, uint64(*simSeed), nlVariant{}, 150)
		return
	}
	n := seedCount()
	if testing.Short() {
		n = 500
	}
	workers := runtime.GOMAXPROCS(0)
	var next atomic.Int64
	var mu sync.Mutex
	failedSeed, failedMsg := int64(-1), ""
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
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
				if msg := runNodeLogRecorded(uint64(seed), nlVariant{}); msg != "" {
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

// Each broken node log must be caught by some seed.
func TestNodeLogSimulationCatchesBrokenVariants(t *testing.T) {
	variants := map[string]nlVariant{
		"credits without reading the node record":           {skipConfirm: true},
		"reads the node record before the bundle's PUT":     {confirmFirst: true},
		"releases a cell without tiering its rows":          {releaseUntiered: true},
		"deletes a bundle before its rows are tiered":       {gcEarly: true},
		"takes a dead owner's cell without recovering logs": {noRecovery: true},
	}
	for name, v := range variants {
		caught := false
		for seed := 0; seed < 3000 && !caught; seed++ {
			caught = runNodeLogRecorded(uint64(seed), v) != ""
		}
		if !caught {
			t.Errorf("broken variant %q passed 3000 seeds: the simulation cannot catch it", name)
		}
	}
}
