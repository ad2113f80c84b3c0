package leasetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/internal/suite"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// fleetHarness runs the fleet protocol on an in-memory bucket in real time
// with a short TTL.
type fleetHarness struct {
	fs  *faultstore.Store
	ttl time.Duration
	seq atomic.Int64
}

func newFleetHarness() *fleetHarness {
	return &fleetHarness{fs: faultstore.New(memstore.New(), faultstore.Config{}), ttl: time.Second}
}

func (h *fleetHarness) NewNode(ctx context.Context) (Node, error) {
	name := fmt.Sprintf("node_t%d", h.seq.Add(1))
	clk := &pauseClock{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Each node reaches the bucket through a view of its own, so that
	// Isolate cuts off this node alone (the others still write its lease:
	// a recoverer fences it).
	view := faultstore.New(h.fs, faultstore.Config{})
	folder := logFolder{nodelog.StoreFolder{Store: view, Opts: nodelog.FoldOptions{Logger: quiet}}}
	n, err := fleet.Join(ctx, fleet.Options{Store: view, Node: name, TTL: h.ttl, Clock: clk, Logger: quiet, NodeLog: true, Folder: folder})
	if err != nil {
		return nil, err
	}
	return &fleetNode{Node: n, h: h, clk: clk, view: view}, nil
}

// WriteLogEpoch leaves the TXID-1 file of epoch in the cell's LTX log.
func (h *fleetHarness) WriteLogEpoch(ctx context.Context, cell string, epoch uint64) error {
	_, err := h.fs.Put(ctx, ltx.Key(cell, epoch, 0, 1, 1), []byte("another writer's snapshot"), store.PutOptions{})
	return err
}

// Bucket and Session are the NodeLogs capability: the node log of a fleet
// node is proven current by the node (fleet.Node implements
// nodelog.Confirmer), which publishes it open in its lease and recovers
// dead nodes' logs before taking their cells.
func (h *fleetHarness) Bucket() store.Store { return h.fs }

func (h *fleetHarness) Session(n Node) (string, string, nodelog.Confirmer, error) {
	fn, ok := n.(*fleetNode)
	if !ok {
		return "", "", nil, ErrUnsupported
	}
	return fn.ID(), fn.Generation(), fn.Node, nil
}

func (h *fleetHarness) Advance(d time.Duration) { time.Sleep(d) }
func (h *fleetHarness) TTL() time.Duration      { return h.ttl }
func (h *fleetHarness) Close() error            { return nil }

// logFolder is the fleet's LogFolder, as core/host wires it.
type logFolder struct{ f nodelog.StoreFolder }

func (l logFolder) FoldLog(ctx context.Context, node, gen string) error {
	_, err := l.f.Fold(ctx, node, gen)
	return err
}

type fleetNode struct {
	*fleet.Node
	h    *fleetHarness
	clk  *pauseClock
	view *faultstore.Store
}

// Pause freezes the node's clock and holds back its timers; resuming
// delivers the renewal timer first, waits until the renewal has written the
// node lease, and only then runs the held deadline timer.
func (n *fleetNode) Pause(on bool) error {
	if on {
		n.clk.pause()
		return nil
	}
	key := layout.NodeKey(n.ID())
	before, err := n.h.fs.Inner().Get(context.Background(), key)
	if err != nil {
		return err
	}
	timers, funcs := n.clk.resume()
	for _, f := range timers {
		f()
	}
	for i := 0; i < 1000; i++ {
		obj, err := n.h.fs.Inner().Get(context.Background(), key)
		if err == nil && obj.Version != before.Version {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, f := range funcs {
		f()
	}
	return nil
}

// pauseClock is the real clock, except that while paused its time stands
// still and its timers that fall due are held back.
type pauseClock struct {
	mu     sync.Mutex
	paused bool
	at     time.Time
	timers []func() // held deliveries of NewTimer timers
	funcs  []func() // held AfterFunc callbacks
}

func (c *pauseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return c.at
	}
	return time.Now()
}

func (c *pauseClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused, c.at = true, time.Now()
}

func (c *pauseClock) resume() (timers, funcs []func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	timers, funcs = c.timers, c.funcs
	c.paused, c.timers, c.funcs = false, nil, nil
	return timers, funcs
}

// due runs f now, or holds it while paused.
func (c *pauseClock) due(f func(), held *[]func()) {
	c.mu.Lock()
	if c.paused {
		*held = append(*held, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

func (c *pauseClock) NewTimer(d time.Duration) clock.Timer {
	t := &pauseTimer{ch: make(chan time.Time, 1)}
	t.t = time.AfterFunc(d, func() {
		c.due(func() {
			select {
			case t.ch <- time.Now():
			default:
			}
		}, &c.timers)
	})
	return t
}

func (c *pauseClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return &pauseTimer{t: time.AfterFunc(d, func() { c.due(f, &c.funcs) })}
}

type pauseTimer struct {
	t  *time.Timer
	ch chan time.Time
}

func (t *pauseTimer) C() <-chan time.Time        { return t.ch }
func (t *pauseTimer) Stop() bool                 { return t.t.Stop() }
func (t *pauseTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

func (n *fleetNode) Crash() { n.Kill() }

func (n *fleetNode) Isolate(cut bool) error {
	if cut {
		n.view.Script(faultstore.Rule{Op: faultstore.OpPut, Key: layout.NodeKey(n.ID()), Fault: faultstore.Fail, Times: -1})
	} else {
		n.view.ClearScript()
	}
	return nil
}

func TestFleetLeasePasses(t *testing.T) {
	t.Parallel()
	Run(t, newFleetHarness())
}

// leaseTwin is one twin and the cases that must fail on it.
type leaseTwin struct {
	name string
	wrap func(Harness) Harness
	must []string
}

// fleetTwins are the twins run on the fleet harness.
var fleetTwins = []leaseTwin{
	{"unexclusive", Unexclusive, []string{"Exclusive", "OneWinnerUnderContention"}},
	{"static epoch", StaticEpoch, []string{"EpochsGrow", "ReleaseHandsOver"}},
	{"never fences", NeverFences, []string{"SelfFence", "ReleaseHandsOver"}},
	{"forgetful release", ForgetfulRelease, []string{"ReleaseHandsOver", "CloseReleasesEverything"}},
	{"crash keeps claims", CrashKeepsClaims, []string{"CrashTakeover"}},
	{"refusing grants", RefusingGrants, []string{"AcquireGrants"}},
	{"log-blind epochs", LogBlindEpochs, []string{"EpochsPassTheLog"}},
	{"revives after a pause", RevivesAfterPause, []string{"PausedPastTTLStaysFenced"}},
	{"loses bundles", LosesBundles, []string{"NodeLogSurvivesACrash"}},
	{"skips the credit read", SkipsCreditRead, []string{"NodeLogSealRacesAFlush"}},
}

// TestEveryCaseHasATwin: every case fails on at least one twin of the
// fleet run (each has one; no exceptions).
func TestEveryCaseHasATwin(t *testing.T) {
	var caught [][]string
	for _, tw := range fleetTwins {
		caught = append(caught, tw.must)
	}
	suite.CheckTwinCoverage(t, caseNames(), caught, nil)
}

// TestSuiteRejectsBrokenLeases: each twin must fail, and in the cases that
// are about the promise it breaks.
func TestSuiteRejectsBrokenLeases(t *testing.T) {
	for _, tw := range fleetTwins {
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			h := tw.wrap(newFleetHarness())
			defer h.Close()
			expectRejected(t, tw.name, RunReport(context.Background(), h), tw.must)
		})
	}
}

// named is rep's results as the shared runner's outcomes.
func (r Report) named() []suite.Named {
	var out []suite.Named
	for _, res := range r.Results {
		o := suite.Outcome{Skipped: res.Skipped}
		switch {
		case res.Skipped:
			o.Reason = res.Message
		case !res.Passed:
			o.Failures = []string{res.Message}
		}
		out = append(out, suite.Named{Name: res.Case, Outcome: o})
	}
	return out
}

// expectRejected fails t unless every case in must failed in rep, the
// report of twin's run.
func expectRejected(t *testing.T, twin string, rep Report, must []string) {
	t.Helper()
	for i, v := range suite.Judge(must, rep.named()) {
		if v != suite.Rejected {
			t.Errorf("twin %q passed case %s (failed: %v)", twin, must[i], rep.Failed())
		}
	}
}
