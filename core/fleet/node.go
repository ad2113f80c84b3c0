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

	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/metrics"
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
	// LostRecordRefusal is how long a cell whose record was lost stays
	// refused before it is looked at again (default 10 s).
	LostRecordRefusal time.Duration
	Clock             clock.Clock
	Logger            *slog.Logger
	// Rand supplies the node id and probe key (crypto/rand by default).
	Rand io.Reader
	// MeterProvider receives the node's metrics (lease renewals,
	// self-fences; see core/metrics). Nil records nothing.
	MeterProvider metric.MeterProvider
	// NodeLog makes the node publish an open node log in its lease (log
	// epoch 1, no followers, never active) for its session's bundles
	// (core/nodelog), prove it current with ConfirmLog, and seal it when
	// it closes.
	NodeLog bool
	// Folder recovers dead sessions' node logs: with it, taking a cell
	// whose dead owner's log is open (and bucket-recoverable) recovers
	// that log first instead of refusing, the same node id restarting
	// recovers its previous session's log before it installs its lease,
	// and, with NodeLog, the node sweeps the bucket for dead sessions
	// every SweepInterval. Without it such cells are refused
	// (*OwnerNeedsRecoveryError).
	Folder LogFolder
	// RecoveryWait is how long taking a cell waits while another node
	// recovers its dead owner's log, and how long installing the lease
	// waits for this id's previous session's lease to expire before
	// recovering its log (default twice the TTL; negative: no wait, the
	// take or the install fails at once and is retried by its caller).
	RecoveryWait time.Duration
	// SweepInterval is how often a node with NodeLog and Folder recovers
	// the open logs of dead nodes and deletes recovered sessions' bundles
	// (default 30 s, as celld; negative: never).
	SweepInterval time.Duration
}

// Node is one CellB node's membership of a fleet: its node lease, kept
// alive in the background, and the cells it owns. It implements
// lease.Lease.
//
// Its protocol code runs as steps on the caller's goroutine (install in
// newNode, renew, TryAcquire, the grant's checks, Release, Close), acting
// on pure decisions (rules) under the injected clock; the only goroutine is
// the shell Join starts, which calls renew every TTL/3.
type Node struct {
	opts   Options
	clock  clock.Clock
	log    *slog.Logger
	pubkey string

	mu       sync.Mutex
	version  store.Version // of our node lease
	deadline time.Time     // monotonic instant writes stop being acknowledged
	fenced   *FencedError  // set, for good, when the node self-fenced
	fencedCh chan struct{} // closed when fenced is set
	grants   map[string]*grant
	refused  map[string]refusal
	timer    clock.Timer // the self-fencing deadline
	closed   bool

	// rules are the pure decisions the node acts on (celld's: see
	// celldRules).
	rules rules
	// unknown is the last renewal whose outcome was unknown (renewals run
	// one at a time: on the shell's goroutine, or the caller's: no lock).
	unknown *unknownRenewal
	// shell is the goroutine that renews the lease every TTL/3; nil for a
	// node whose caller drives its renewals (newNode without start).
	shell *shell
	// metrics counts renewals and self-fences (nil: none).
	metrics *metrics.Fleet
	// nodeLog is the log member the lease carries (nil without
	// Options.NodeLog), under mu.
	nodeLog *layout.NodeLog
	// recovering holds one lock per node whose log this node recovers
	// (recover.go).
	recovering map[string]*sync.Mutex
	// sweeper is the goroutine that sweeps the bucket for dead
	// sessions' logs (nil unless NodeLog and Folder).
	sweeper *shell
	// confirmed is the last record ConfirmLog found current (confirm.go).
	confirmed confirmedRecord
}

// rules are the pure decisions of the protocol a node acts on. Every node
// Join makes uses celld's (celldRules); they are a value of the node, not
// code inside it, so the protocol code around them stays one path whatever
// decides.
type rules struct {
	// acquire decides the next step of taking a cell.
	acquire func(AcquireState) Action
	// unfenced reports whether the node may still take cells and
	// acknowledge writes at now, given its fence deadline.
	unfenced func(now, deadline time.Time) bool
}

// celldRules are celld's decisions: DecideAcquire and WithinDeadline.
func celldRules() rules {
	return rules{acquire: DecideAcquire, unfenced: WithinDeadline}
}

// shell is the thin goroutine around a node's renewal step (Node.renew):
// it waits for the renewal timer, renews, and stops when asked or once the
// node fenced.
type shell struct {
	stop chan struct{}
	done chan struct{}
}

type refusal struct {
	until time.Time
	err   error
}

var _ lease.Lease = (*Node)(nil)

// ErrNodeClosed is returned by TryAcquire after Close.
var ErrNodeClosed = errors.New("fleet node closed")

// Why a node self-fences (FencedError.Reason).
const (
	// FenceLate: the deadline passed before a renewal completed.
	FenceLate = "renewals of the node lease stopped arriving in time"
	// FenceRenewedLate: a renewal completed, but only after the deadline,
	// so the lease may have lapsed in between (a paused process).
	FenceRenewedLate = "a renewal of the node lease completed only after the fence deadline, so the lease may have lapsed in between"
	// FenceReplaced: the node lease was replaced by another writer.
	FenceReplaced = "the node lease was replaced by another writer"
	// FenceLogClosed: the node's log is no longer open in its record (a
	// recoverer fenced or sealed it, or another session replaced it).
	FenceLogClosed = "the node's log is no longer open in its record: another node is recovering or has recovered it"
)

// FencedError says why a node self-fenced. The fence is latched: a fenced
// node never takes a cell or acknowledges a write again, whatever its later
// renewals would say, because another node may have taken its cells while
// its lease could have lapsed. Only a new node (Join again; `cellb serve`
// exits with status 3 for its supervisor to restart it) serves again.
type FencedError struct {
	Node   string
	Reason string
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("node %s self-fenced: %s; it takes no cell and acknowledges no write again", e.Node, e.Reason)
}

// NodeRecordError: the node lease under our id carries a node log that
// must be recovered first, and this node cannot (no Folder, or a log only
// celld recovers, or its session is still live); this id cannot be
// installed.
type NodeRecordError struct {
	Node, State string
	Err         error // why it was not recovered, if recovery was tried
}

func (e *NodeRecordError) Error() string {
	msg := fmt.Sprintf("node lease %s carries a node log in state %q that must be recovered before this id can be used", layout.NodeKey(e.Node), e.State)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NodeRecordError) Unwrap() error { return e.Err }

// Join runs celld's start-up probe on the bucket, then installs the node
// lease and starts renewing it. A bucket that fails the probe is refused
// before anything is written, with the probe's *store.ProbeError (see
// probeBucket); the probe costs store.ProbeRequests requests.
func Join(ctx context.Context, opts Options) (*Node, error) {
	if err := probeBucket(ctx, opts); err != nil {
		return nil, err
	}
	n, err := newNode(ctx, opts, celldRules())
	if err != nil {
		return nil, err
	}
	n.start()
	return n, nil
}

// newNode installs the node lease of a node acting on r, without the
// start-up probe and without the shell: nothing renews the lease until
// start is called, or the caller drives renew itself (as the seeded
// simulation does, on its own thread, so that a seed replays exactly).
func newNode(ctx context.Context, opts Options, r rules) (*Node, error) {
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
	if err := store.ValidateKey(layout.NodeKey(opts.Node)); err != nil {
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
		fencedCh: make(chan struct{}), rules: r,
	}
	if n.metrics, err = metrics.NewFleet(opts.MeterProvider); err != nil {
		return nil, fmt.Errorf("fleet: metrics: %w", err)
	}
	if opts.NodeLog {
		n.nodeLog = layout.OpenNodeLog(1)
	}
	if opts.SweepInterval == 0 {
		n.opts.SweepInterval = 30 * time.Second
	}
	if opts.RecoveryWait == 0 {
		n.opts.RecoveryWait = 2 * n.opts.TTL
	}
	if err := n.install(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// start runs the shell: a goroutine that calls renew every TTL/3 until the
// node closes or fences. The timer exists before start returns, so a fake
// clock advanced right after Join fires it.
func (n *Node) start() {
	sh := &shell{stop: make(chan struct{}), done: make(chan struct{})}
	n.shell = sh
	go sh.run(n, n.clock.NewTimer(RenewInterval(n.opts.TTL)))
	if n.opts.NodeLog && n.opts.Folder != nil && n.opts.SweepInterval > 0 {
		sw := &shell{stop: make(chan struct{}), done: make(chan struct{})}
		n.sweeper = sw
		go n.sweepLoop(sw)
	}
}

// stopShell stops the shell, if the node has one, and waits for it: no
// renewal is under way when it returns.
func (n *Node) stopShell() {
	for _, sh := range []*shell{n.shell, n.sweeper} {
		if sh != nil {
			close(sh.stop)
			<-sh.done
		}
	}
}

// Fenced is closed when the node self-fences (see FencedError).
func (n *Node) Fenced() <-chan struct{} { return n.fencedCh }

// FenceErr is the node's *FencedError once it self-fenced, or nil.
func (n *Node) FenceErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fenced == nil {
		return nil
	}
	return n.fenced
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

func (n *Node) record(expiresMs uint64) layout.NodeLease {
	n.mu.Lock()
	owned := uint64(len(n.grants))
	n.mu.Unlock()
	now := uint64(n.clock.Now().UnixMilli())
	n.mu.Lock()
	var lg *layout.NodeLog
	if n.nodeLog != nil {
		c := *n.nodeLog
		lg = &c
	}
	n.mu.Unlock()
	return layout.NodeLease{
		Log:  lg,
		Node: n.opts.Node, ExpiresMs: expiresMs, Addr: n.opts.Addr,
		ProbePublicKey: n.pubkey, PeerProtocol: 0, PacedHandoff: true,
		OwnershipIndexGeneration: n.pubkey,
		Load: &layout.NodeLoad{
			SampledMs: now, OwnedCells: owned, ResidentCells: owned,
			PlacementWeight: 0, BucketFormat: 1, MemoryHeadroom: true,
		},
	}
}

// install writes the first node lease: create-only when absent, otherwise
// over the previous generation's record (a restart with the same id).
func (n *Node) install(ctx context.Context) error {
	key := layout.NodeKey(n.opts.Node)
	for attempt := 0; attempt < 5; attempt++ {
		cond := store.IfAbsent
		obj, err := store.GetData(ctx, n.opts.Store, key)
		switch {
		case store.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("fleet: read %s: %w", key, err)
		default:
			old, derr := layout.DecodeNodeLease(key, obj.Data)
			if derr == nil && old.Log.NeedsRecovery() {
				if err := n.recoverPrevious(ctx, old); err != nil {
					return &NodeRecordError{Node: n.opts.Node, State: old.Log.State, Err: err}
				}
				continue // read the sealed record again
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
	obj, err := store.GetData(ctx, n.opts.Store, key)
	if err != nil || string(obj.Data) != string(body) {
		return "", false
	}
	return obj.Version, true
}

// renewed records a successful write of the lease sent at sentAt and moves
// the self-fencing deadline, unless the deadline had already passed when
// the write completed: then the lease may have lapsed in between (another
// node may have taken this node's cells meanwhile), and the node fences
// for good instead.
func (n *Node) renewed(sentAt time.Time, v store.Version) {
	n.mu.Lock()
	n.version = v
	if n.fenced != nil {
		n.mu.Unlock()
		return
	}
	if !n.deadline.IsZero() && !n.rules.unfenced(n.clock.Now(), n.deadline) {
		grants := n.fenceLocked(FenceRenewedLate)
		n.mu.Unlock()
		breakGrants(grants)
		return
	}
	defer n.mu.Unlock()
	n.deadline = FenceDeadline(sentAt, n.opts.TTL, n.opts.FenceMargin)
	d := n.deadline.Sub(n.clock.Now())
	if n.timer == nil {
		n.timer = n.clock.AfterFunc(d, n.deadlinePassed)
	} else {
		n.timer.Reset(d)
	}
}

// deadlinePassed fires when renewals stopped arriving in time (a paused
// process, an unreachable bucket): the node fences.
func (n *Node) deadlinePassed() {
	n.mu.Lock()
	if n.closed || n.rules.unfenced(n.clock.Now(), n.deadline) {
		n.mu.Unlock()
		return
	}
	grants := n.fenceLocked(FenceLate)
	n.mu.Unlock()
	breakGrants(grants)
}

// fence latches the self-fence and breaks every owned cell.
func (n *Node) fence(reason string) {
	n.mu.Lock()
	grants := n.fenceLocked(reason)
	n.mu.Unlock()
	breakGrants(grants)
}

// fenceLocked latches the self-fence (the first reason wins) and hands back
// the grants to break, outside n.mu. Caller holds n.mu.
func (n *Node) fenceLocked(reason string) map[string]*grant {
	if n.fenced == nil {
		n.fenced = &FencedError{Node: n.opts.Node, Reason: reason}
		close(n.fencedCh)
		n.metrics.SelfFence(fenceCode(reason))
		if n.timer != nil {
			n.timer.Stop()
		}
		n.log.Error("SELF-FENCE: this node's lease could have lapsed; it refuses every write and takes no cell again", "why", reason)
	}
	grants := n.grants
	n.grants = map[string]*grant{}
	return grants
}

func breakGrants(grants map[string]*grant) {
	for _, g := range grants {
		g.lose(&lease.LeaseLapsedError{Cell: g.cell})
	}
}

// liveLocked is nil while the node may take cells and acknowledge writes:
// it has renewed its lease in time ever since it joined. Past the deadline
// it fences (the grants to break are returned). Caller holds n.mu.
func (n *Node) liveLocked() (map[string]*grant, error) {
	if n.fenced != nil {
		return nil, n.fenced
	}
	if !n.rules.unfenced(n.clock.Now(), n.deadline) {
		grants := n.fenceLocked(FenceLate)
		return grants, n.fenced
	}
	return nil, nil
}

// writable is nil while writes may be acknowledged.
func (n *Node) writable(cell string) error {
	n.mu.Lock()
	grants, err := n.liveLocked()
	n.mu.Unlock()
	breakGrants(grants)
	if err != nil {
		return &lease.LeaseLapsedError{Cell: cell}
	}
	return nil
}

func (sh *shell) run(n *Node, t clock.Timer) {
	defer close(sh.done)
	defer t.Stop()
	for {
		select {
		case <-sh.stop:
			return
		case <-t.C():
		}
		more := n.renew()
		t.Reset(RenewInterval(n.opts.TTL))
		if !more {
			// The lease is left to expire: a fenced node serves nothing.
			return
		}
	}
}

// renew is the node's renewal step: one conditional write of the node
// lease (see renewOnce), unless the node fenced. It reports whether the
// node goes on renewing: false once it fenced. The shell calls it every
// TTL/3; a caller driving the node calls it instead.
func (n *Node) renew() bool {
	if n.isFenced() {
		return false
	}
	n.renewOnce(layout.NodeKey(n.opts.Node))
	return !n.isFenced()
}

func (n *Node) isFenced() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fenced != nil
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
	n.metrics.Renewal(renewalOutcome(err))
	switch {
	case err == nil:
		n.renewed(sentAt, nv)
		n.unknown = nil
	case store.IsAmbiguous(err):
		n.unknown = &unknownRenewal{sentAt: sentAt, body: body}
		if n.adoptUnknown(key) {
			return
		}
		n.log.Warn("node lease renewal outcome unknown; retrying", "err", err)
	case store.IsPreconditionFailed(err):
		// Our version is stale. If an earlier renewal whose outcome was
		// unknown applied after all, the lease holds its body: adopt it.
		if n.adoptUnknown(key) {
			return
		}
		// Someone replaced our lease: another process with our id, or a
		// dead-node GC that thought us dead. Either way we are not the
		// owner we think we are.
		n.fence(FenceReplaced)
	default:
		n.log.Warn("node lease renewal failed; retrying while the lease lasts", "err", err)
	}
}

// unknownRenewal is the last renewal whose outcome was unknown.
type unknownRenewal struct {
	sentAt time.Time
	body   []byte
}

// adoptUnknown reads the lease back (with a context of its own: the
// renewal's may have run out, during a pause say) and, if it holds the
// body of the renewal whose outcome was unknown, records that renewal as
// applied — at its own send time, so a late answer still fences.
func (n *Node) adoptUnknown(key string) bool {
	u := n.unknown
	if u == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.TTL/3)
	defer cancel()
	v, ok := n.readBack(ctx, key, u.body)
	if !ok {
		return false
	}
	n.unknown = nil
	n.renewed(u.sentAt, v)
	return true
}

// Close releases every owned cell (writing {"node":"","epoch":N}), waits for
// those writes, stops renewing and deletes the node lease, so the next node
// takes the cells at once. A fenced node owns nothing; it rewrites its lease
// with expires_ms 0, if the lease is still the version it wrote last (not
// replaced, not rewritten by a restart under the same id), so that its cells
// too move at once. The store stays open.
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
	n.stopShell()
	n.mu.Lock()
	fenced, v := n.fenced != nil, n.version
	n.mu.Unlock()
	key := layout.NodeKey(n.opts.Node)
	if !fenced {
		if n.opts.NodeLog {
			// Every cell was released after its rows were tiered, and the
			// node log deleted its bundles: seal the log before the lease
			// goes, so a record left behind (a failed delete) says the
			// bucket is complete.
			n.mu.Lock()
			n.nodeLog.State = layout.NodeLogSealed
			n.mu.Unlock()
			body := n.record(uint64(n.clock.Now().Add(n.opts.TTL).UnixMilli())).Encode()
			if _, err := n.opts.Store.Put(ctx, key, body, store.PutOptions{Condition: store.IfVersion(v)}); err != nil {
				errs = append(errs, fmt.Errorf("seal the node log: %w", err))
				return errors.Join(errs...)
			}
		}
		if err := n.opts.Store.Delete(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("delete node lease: %w", err))
		}
		return errors.Join(errs...)
	}
	// A fenced node stopped renewing, so another process may have written
	// the lease since (the same id restarted): expire it only if it is still
	// the version this node wrote last.
	_, err := n.opts.Store.Put(ctx, key, n.record(0).Encode(), store.PutOptions{Condition: store.IfVersion(v)})
	if err != nil && !store.IsPreconditionFailed(err) {
		errs = append(errs, fmt.Errorf("expire node lease: %w", err))
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
	n.stopShell()
	for _, g := range grants {
		g.lose(ErrNodeClosed)
	}
}
