package fleet

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/store"
)

// Defaults of the protocol, as celld uses them.
const (
	DefaultTTL          = 10 * time.Second
	DefaultLostRecordMs = 10_000
)

// Options configure one node of a fleet.
type Options struct {
	// Store is the shared bucket. Required. The node does not close it.
	Store store.Store
	// Node is this node's id; by default node_<32 lowercase hex>.
	Node string
	// Addr is the peer address other nodes (and celld) route this node's
	// cells to. Empty means the node serves no peer protocol: it then
	// advertises UnroutableAddr(Node), so celld refuses rather than steals.
	Addr string
	// TTL is the node lease's life (default 10 s); it is renewed every
	// TTL/3.
	TTL time.Duration
	// FenceMargin is how long before its published expiry a node stops
	// acknowledging writes, to absorb clock drift between nodes (default
	// TTL/5).
	FenceMargin time.Duration
	// VerifyOwnerOnAck adds celld's acknowledgement rule: before each
	// acknowledgement, re-read own.json and acknowledge only if it still
	// names this node and epoch. It costs one read per acknowledgement.
	VerifyOwnerOnAck bool
	// LostRecordRefusal is how long a cell whose record was lost stays
	// refused before it is looked at again (default 10 s).
	LostRecordRefusal time.Duration
	Clock             clock.Clock
	Logger            *slog.Logger
	// Rand supplies the node id and probe key (crypto/rand by default).
	Rand io.Reader
}

// Node is one CellB node's membership of a fleet: its node lease, kept
// alive in the background, and the cells it owns. It implements
// lease.Lease.
type Node struct {
	opts   Options
	clock  clock.Clock
	log    *slog.Logger
	pubkey string

	mu       sync.Mutex
	version  store.Version // of our node lease
	deadline time.Time     // monotonic instant writes stop being acknowledged
	fenced   error         // set when the node self-fenced
	grants   map[string]*grant
	refused  map[string]refusal
	timer    clock.Timer // the self-fencing deadline
	closed   bool
	rounds   uint64 // renewal attempts finished, for tests that step a fake clock

	stop chan struct{}
	done chan struct{}

	// Simulation hooks (set only by tests in this package): renewals
	// driven by the simulator's thread instead of a goroutine, and
	// deliberately broken protocol variants the simulator must catch.
	sim simHooks
}

type simHooks struct {
	manual    bool                      // no renewal goroutine; the simulator calls renewDue
	nextRenew time.Time                 // when renewDue renews next
	decide    func(AcquireState) Action // replaces DecideAcquire
	noFence   bool                      // never self-fence
}

type refusal struct {
	until time.Time
	err   error
}

var _ lease.Lease = (*Node)(nil)

// ErrNodeClosed is returned by TryAcquire after Close.
var ErrNodeClosed = errors.New("fleet node closed")

// NodeRecordError: the node lease under our id belongs to a celld node
// whose log must be recovered first; this id cannot be installed.
type NodeRecordError struct {
	Node, State string
}

func (e *NodeRecordError) Error() string {
	return fmt.Sprintf("node lease nodes/%s.json carries a node log in state %q: a celld node must recover it before this id can be used", e.Node, e.State)
}

// Join installs the node lease and starts renewing it.
func Join(ctx context.Context, opts Options) (*Node, error) {
	return join(ctx, opts, simHooks{})
}

func join(ctx context.Context, opts Options, hooks simHooks) (*Node, error) {
	if opts.Store == nil {
		return nil, errors.New("fleet: Options.Store is required")
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Node == "" {
		var b [16]byte
		if _, err := io.ReadFull(opts.Rand, b[:]); err != nil {
			return nil, err
		}
		opts.Node = "node_" + hex.EncodeToString(b[:])
	}
	if err := store.ValidateKey(NodeKey(opts.Node)); err != nil {
		return nil, fmt.Errorf("fleet: node id %q: %w", opts.Node, err)
	}
	if opts.Addr == "" {
		opts.Addr = UnroutableAddr(opts.Node)
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.FenceMargin <= 0 {
		opts.FenceMargin = opts.TTL / 5
	}
	if opts.LostRecordRefusal <= 0 {
		opts.LostRecordRefusal = DefaultLostRecordMs * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pub, _, err := ed25519.GenerateKey(opts.Rand)
	if err != nil {
		return nil, err
	}
	n := &Node{
		opts: opts, clock: clock.Or(opts.Clock), pubkey: hex.EncodeToString(pub),
		log:    opts.Logger.With("node", opts.Node),
		grants: map[string]*grant{}, refused: map[string]refusal{},
		stop: make(chan struct{}), done: make(chan struct{}),
		sim: hooks,
	}
	if err := n.install(ctx); err != nil {
		return nil, err
	}
	if n.sim.manual {
		n.sim.nextRenew = n.clock.Now().Add(RenewInterval(n.opts.TTL))
		close(n.done)
		return n, nil
	}
	// The timer exists before Join returns, so a fake clock advanced right
	// after Join fires it.
	go n.renewLoop(n.clock.NewTimer(RenewInterval(n.opts.TTL)))
	return n, nil
}

// ID is the node's id.
func (n *Node) ID() string { return n.opts.Node }

// Addr is the address the node advertises.
func (n *Node) Addr() string { return n.opts.Addr }

// Generation is this process's incarnation of the node: a random value
// drawn at Join and published in the node lease as
// ownership_index_generation (celld's "process generation"). A node that
// restarts under the same id publishes a new one, so peer requests signed
// for the previous incarnation are refused.
func (n *Node) Generation() string { return n.pubkey }

func (n *Node) record(expiresMs uint64) NodeLease {
	n.mu.Lock()
	owned := uint64(len(n.grants))
	n.mu.Unlock()
	now := uint64(n.clock.Now().UnixMilli())
	return NodeLease{
		Node: n.opts.Node, ExpiresMs: expiresMs, Addr: n.opts.Addr,
		ProbePublicKey: n.pubkey, PeerProtocol: 0, PacedHandoff: true,
		OwnershipIndexGeneration: n.pubkey,
		Load: &NodeLoad{
			SampledMs: now, OwnedCells: owned, ResidentCells: owned,
			PlacementWeight: 0, BucketFormat: 1, MemoryHeadroom: true,
		},
	}
}

// install writes the first node lease: create-only when absent, otherwise
// over the previous generation's record (a restart with the same id).
func (n *Node) install(ctx context.Context) error {
	key := NodeKey(n.opts.Node)
	for attempt := 0; attempt < 5; attempt++ {
		cond := store.IfAbsent
		obj, err := n.opts.Store.Get(ctx, key)
		switch {
		case store.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("fleet: read %s: %w", key, err)
		default:
			old, derr := DecodeNodeLease(key, obj.Data)
			if derr == nil && old.Log.NeedsRecovery() {
				return &NodeRecordError{Node: n.opts.Node, State: old.Log.State}
			}
			cond = store.IfVersion(obj.Version)
		}
		sentAt := n.clock.Now()
		expires := uint64(sentAt.Add(n.opts.TTL).UnixMilli())
		body := n.record(expires).Encode()
		v, err := n.opts.Store.Put(ctx, key, body, store.PutOptions{Condition: cond})
		if err == nil {
			n.renewed(sentAt, v)
			return nil
		}
		if store.IsAmbiguous(err) {
			if v, ok := n.readBack(ctx, key, body); ok {
				n.renewed(sentAt, v)
				return nil
			}
			continue
		}
		if store.IsPreconditionFailed(err) {
			continue
		}
		return fmt.Errorf("fleet: write %s: %w", key, err)
	}
	return fmt.Errorf("fleet: could not install %s: it kept changing under us", key)
}

// readBack reports whether the lease in the bucket is exactly body (an
// ambiguous write that applied).
func (n *Node) readBack(ctx context.Context, key string, body []byte) (store.Version, bool) {
	obj, err := n.opts.Store.Get(ctx, key)
	if err != nil || string(obj.Data) != string(body) {
		return "", false
	}
	return obj.Version, true
}

// renewed records a successful write of the lease sent at sentAt and moves
// the self-fencing deadline.
func (n *Node) renewed(sentAt time.Time, v store.Version) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.version = v
	if n.fenced != nil {
		n.log.Info("node lease renewed after self-fencing; cells will be taken again under new epochs")
		n.fenced = nil
	}
	n.deadline = FenceDeadline(sentAt, n.opts.TTL, n.opts.FenceMargin)
	d := n.deadline.Sub(n.clock.Now())
	if n.timer == nil {
		n.timer = n.clock.AfterFunc(d, n.deadlinePassed)
	} else {
		n.timer.Reset(d)
	}
}

// deadlinePassed fires when renewals stopped arriving in time (a paused
// process, an unreachable bucket): every owned cell breaks.
func (n *Node) deadlinePassed() {
	n.mu.Lock()
	if n.closed || n.sim.noFence || n.clock.Now().Before(n.deadline) {
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.fence(errors.New("renewals of the node lease stopped arriving in time"))
}

// fence stops acknowledging writes and breaks every owned cell.
func (n *Node) fence(why error) {
	n.mu.Lock()
	if n.fenced == nil {
		n.fenced = why
		n.log.Error("SELF-FENCE: this node's lease could have lapsed; refusing writes and breaking owned cells", "why", why)
	}
	grants := n.grants
	n.grants = map[string]*grant{}
	n.mu.Unlock()
	for _, g := range grants {
		g.lose(&lease.LeaseLapsedError{Cell: g.cell})
	}
}

// writable is nil while writes may be acknowledged.
func (n *Node) writable(cell string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sim.noFence {
		return nil
	}
	if n.fenced != nil || !n.clock.Now().Before(n.deadline) {
		return &lease.LeaseLapsedError{Cell: cell}
	}
	return nil
}

func (n *Node) renewLoop(t clock.Timer) {
	defer close(n.done)
	key := NodeKey(n.opts.Node)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C():
		}
		n.renewOnce(key)
		t.Reset(RenewInterval(n.opts.TTL))
		n.mu.Lock()
		n.rounds++
		n.mu.Unlock()
	}
}

func (n *Node) renewOnce(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.TTL/3)
	defer cancel()
	n.mu.Lock()
	v := n.version
	n.mu.Unlock()
	sentAt := n.clock.Now()
	body := n.record(uint64(sentAt.Add(n.opts.TTL).UnixMilli())).Encode()
	nv, err := n.opts.Store.Put(ctx, key, body, store.PutOptions{Condition: store.IfVersion(v)})
	switch {
	case err == nil:
		n.renewed(sentAt, nv)
	case store.IsAmbiguous(err):
		if nv, ok := n.readBack(ctx, key, body); ok {
			n.renewed(sentAt, nv)
			return
		}
		n.log.Warn("node lease renewal outcome unknown; retrying", "err", err)
	case store.IsPreconditionFailed(err):
		// Someone replaced our lease: another process with our id, or a
		// dead-node GC that thought us dead. Either way we are not the
		// owner we think we are.
		n.fence(fmt.Errorf("node lease %s was replaced by another writer", key))
		n.reinstall()
	default:
		n.log.Warn("node lease renewal failed; retrying while the lease lasts", "err", err)
	}
}

// reinstall takes the lease again after fencing, so the node can serve
// again under new epochs.
func (n *Node) reinstall() {
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.TTL)
	defer cancel()
	if err := n.install(ctx); err != nil {
		n.log.Warn("could not reinstall the node lease", "err", err)
	}
}

// Close releases every owned cell (writing {"node":"","epoch":N}), waits for
// those writes, stops renewing and deletes the node lease, so the next node
// takes the cells at once. The store stays open.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	grants := make([]*grant, 0, len(n.grants))
	for _, g := range n.grants {
		grants = append(grants, g)
	}
	if n.timer != nil {
		n.timer.Stop()
	}
	n.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(grants))
	for i, g := range grants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Release(ctx)
		}()
	}
	wg.Wait()
	if !n.sim.manual {
		close(n.stop)
	}
	<-n.done
	if err := n.opts.Store.Delete(ctx, NodeKey(n.opts.Node)); err != nil {
		errs = append(errs, fmt.Errorf("delete node lease: %w", err))
	}
	return errors.Join(errs...)
}

// Kill stops the node without releasing anything, as a crash would (for
// tests and simulations): the lease simply stops being renewed.
func (n *Node) Kill() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	if n.timer != nil {
		n.timer.Stop()
	}
	grants := n.grants
	n.grants = map[string]*grant{}
	n.mu.Unlock()
	if !n.sim.manual {
		close(n.stop)
	}
	<-n.done
	for _, g := range grants {
		g.lose(ErrNodeClosed)
	}
}

// renewDue runs every renewal that is due by the node's clock, on the
// caller's thread (simulation only).
func (n *Node) renewDue() {
	for !n.clock.Now().Before(n.sim.nextRenew) {
		n.mu.Lock()
		closed := n.closed
		n.mu.Unlock()
		if closed {
			return
		}
		n.renewOnce(NodeKey(n.opts.Node))
		n.sim.nextRenew = n.sim.nextRenew.Add(RenewInterval(n.opts.TTL))
	}
}
