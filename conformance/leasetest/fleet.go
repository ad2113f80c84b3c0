package leasetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
)

// FleetOptions tune NewFleetHarness.
type FleetOptions struct {
	// TTL is the nodes' lease TTL (default 1 s). Raise it for a bucket
	// whose requests take more than a small part of it (a distant cloud
	// region): a node that cannot renew within the TTL fences itself, and
	// the suite takes that for a failure.
	TTL time.Duration
}

// NewFleetHarness runs celld's fleet protocol (core/fleet, with its node
// log) on bucket in real time: the harness that checks a bucket can carry
// CellB's ownership, from your own test:
//
//	func TestLeasesOnMyBucket(t *testing.T) {
//		leasetest.Run(t, leasetest.NewFleetHarness(myBucket(t), leasetest.FleetOptions{TTL: 3 * time.Second}))
//	}
//
// Each node reaches the bucket through a fault-injecting view of its own
// (core/store/faultstore), which Isolate uses. The suite writes under
// nodes/, cells/, log/ and wake/ of bucket: give it an empty bucket or
// prefix (store.WithPrefix), and delete what it leaves afterwards.
func NewFleetHarness(bucket store.Store, opts FleetOptions) Harness {
	if opts.TTL <= 0 {
		opts.TTL = time.Second
	}
	return &fleetHarness{fs: faultstore.New(bucket, faultstore.Config{}), ttl: opts.TTL}
}

// fleetHarness is NewFleetHarness's Harness.
type fleetHarness struct {
	fs  *faultstore.Store
	ttl time.Duration
	seq atomic.Int64
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
