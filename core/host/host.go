// Package host builds a CellB node from values — a driver, a bucket, a
// durability mode, an ownership protocol, classes — and runs it: it owns
// the start-up order, the shutdown order, the peer and local listeners,
// and the routing of every call to its cell's owner. cmd/cellb serve is
// flags around it; docs/embedding.md shows how a Go server embeds it.
//
// Start-up: the start-up probe (inside fleet.Join) and wake preparation
// (wake.Prepare, which needs every node lease expired, so before this
// node's exists), then the fleet join (or, on a single host, the shard
// locks and, on the LTX mode, the folding of dead processes' node logs
// and this process's own; singlelog.go), the runtime, the classes, and last
// the wake service (it may wake the classes' cells) or, on a single host,
// the shard watch (it learns the alarms of shards other processes let go).
//
// Shutdown (Close): the public listener drains; the runtime closes (each
// cell's record or shard is released as it closes, after its last commit
// is durable); the wake service stops; the local socket drains; the node
// log closes (a single host's session lock with it); the fleet
// membership ends (every record still owned released, the node lease
// deleted); the peer listener closes last, once it has been quiet for a
// moment, so a call forwarded on a view from just before the release is
// answered "closing" (not applied) rather than reset; the shard locks
// close.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/peer"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/wake"
)

// ErrConfig is matched by every error New returns for a Config it refuses.
var ErrConfig = errors.New("host: invalid configuration")

// Host is one running node. It is safe for concurrent use.
type Host struct {
	cfg  Config
	log  *slog.Logger
	clk  clock.Clock
	name string // the node's name in answers: its fleet id, or "local"

	rt  *cell.Runtime
	r2  r2Buckets      // Config.R2's buckets, by binding (r2.go)
	mux *http.ServeMux // the classes' routes (Setup.Mux)
	// handler serves mux with routing, behind guard (Handler); internal
	// also serves FetchPath, for the peer port and the local socket, whose
	// callers are hosts that guarded the request already.
	handler, internal http.Handler
	limits            Limits
	node              *fleet.Node // nil unless Fleet
	// nodeLog is the node log: a fleet node's, or a single host
	// process's (localLog then holds its session); nil with PerCellLog,
	// another mode, or no ownership.
	nodeLog    *nodelog.Log
	localLog   *localLog
	shardLease *recoveringLease // the shard lease the runtime uses (SingleHost)
	wake       *wake.Service    // nil unless Fleet
	shards     *shard.Lease     // nil unless SingleHost
	// stopServing ends the shard watch and the wake polling: the first
	// step of Close.
	stopServing context.CancelFunc

	// local serves calls other processes on this host route here for the
	// shards this process holds (nil unless SingleHost with a socket).
	local     *http.Server
	localLn   net.Listener
	localPath string

	public *http.Server // serves Config.Listener; nil without one
	// wsRelays are the WebSockets this node relays to their cell's owner
	// (websocket.go).
	wsRelays wsRelays

	// forward sends a call to its cell's owner (a fleet peer, or the local
	// process holding its shard); nil when calls are not routed.
	forward forwardFunc
	peerKey []byte
	peerRcv *peer.Receiver
	peer    *http.Server // serves FleetConfig.PeerListener; nil without one
	// draining is set when shutdown starts: from then on every peer answer
	// closes its connection, so no connection sits idle when the peer port
	// finally closes (a request written to an idle connection as it is
	// closed could not be told apart from one lost mid-call).
	draining atomic.Bool
	// lastPeerCall is when the peer port last received a call (Unix ns).
	lastPeerCall atomic.Int64

	errc      chan error
	peerAddr  string // the address this fleet node advertises
	closeOnce sync.Once
	closeErr  error
}

// New builds and starts a node in the start-up order (see the package
// documentation). On error everything started is stopped again; the
// listeners in cfg are closed.
func New(ctx context.Context, cfg Config) (*Host, error) {
	h, err := build(ctx, cfg)
	if err != nil {
		if cfg.Listener != nil {
			cfg.Listener.Close()
		}
		if cfg.Fleet.PeerListener != nil {
			cfg.Fleet.PeerListener.Close()
		}
		return nil, err
	}
	h.serve()
	return h, nil
}

func check(cfg Config) error {
	switch {
	case cfg.Driver == nil:
		return fmt.Errorf("%w: Config.Driver is required", ErrConfig)
	case cfg.DataDir == "":
		return fmt.Errorf("%w: Config.DataDir is required", ErrConfig)
	case cfg.Bucket == nil && (cfg.Ownership == Fleet || cfg.Mode.Open != nil):
		return fmt.Errorf("%w: Config.Bucket is required for a fleet or a durability mode", ErrConfig)
	case cfg.Ownership != Fleet && cfg.Fleet.PeerListener != nil:
		return fmt.Errorf("%w: a peer listener needs Fleet ownership", ErrConfig)
	case cfg.Ownership < NoOwnership || cfg.Ownership > Fleet:
		return fmt.Errorf("%w: unknown ownership %d", ErrConfig, int(cfg.Ownership))
	}
	return nil
}

func build(ctx context.Context, cfg Config) (_ *Host, err error) {
	if err := check(cfg); err != nil {
		return nil, err
	}
	// Every request to the bucket is measured here, once, whichever
	// adapter serves it: the fleet, the wake service, the peer key and
	// the durability mode all get the wrapper.
	if cfg.Bucket, err = metrics.InstrumentStore(cfg.MeterProvider, cfg.Bucket); err != nil {
		return nil, fmt.Errorf("host: metrics: %w", err)
	}
	h := &Host{cfg: cfg, log: cfg.Logger, clk: clock.Or(cfg.Clock), name: "local", mux: http.NewServeMux(), errc: make(chan error, 3)}
	h.limits = cfg.Limits.withDefaults()
	if h.log == nil {
		h.log = slog.Default()
	}
	if err := checkLocalSync(ctx, cfg, h.log.Warn); err != nil {
		return nil, err
	}
	if h.r2, err = openR2(cfg); err != nil {
		return nil, err
	}
	var serving context.Context
	serving, h.stopServing = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			h.stopServing()
			if h.rt != nil {
				h.rt.Close(ctx)
			}
			if h.wake != nil {
				h.wake.Close(ctx)
			}
			h.shutdownPorts(ctx)
		}
	}()
	opts := cell.Options{
		ScriptName: cfg.ScriptName, Driver: cfg.Driver, Logger: h.log, Clock: cfg.Clock,
		IdleTimeout: cfg.IdleTimeout, IdleConnTimeout: cfg.IdleConnTimeout, MaxOpenCells: cfg.MaxOpenCells,
		AlarmResidency: cfg.AlarmResidency,
		DataDir:        filepath.Join(cfg.DataDir, "cells"), MeterProvider: cfg.MeterProvider,
		Router: router{h},
	}
	h.handler = guard(h.routed(h.mux), h.limits.MaxBodyBytes)
	internal := http.NewServeMux()
	internal.HandleFunc(FetchPath, h.serveFetch)
	internal.HandleFunc(CallPath, h.serveCall)
	internal.Handle("/", h.mux)
	h.internal = h.routed(internal)
	switch cfg.Ownership {
	case Fleet:
		if err := h.joinFleet(ctx, &opts); err != nil {
			return nil, err
		}
	case SingleHost:
		if err := h.openShards(ctx, &opts); err != nil {
			return nil, err
		}
	}
	if cfg.Mode.Open != nil {
		mode := cfg.Mode
		if h.nodeLog != nil {
			mode = ltxlog.NodeLogMode(h.nodeLog)
		}
		if opts.Log, err = mode.Open(durability.OpenOptions{Store: cfg.Bucket, Clock: cfg.Clock, Logger: h.log, Retention: cfg.Retention}); err != nil {
			return nil, err
		}
	}
	if h.rt, err = cell.New(opts); err != nil {
		return nil, err
	}
	if cfg.Classes != nil {
		if err := cfg.Classes(&Setup{Runtime: h.rt, Mux: h.mux, Node: h.name, Route: h.Route, host: h}); err != nil {
			return nil, err
		}
	}
	if h.wake != nil {
		// Classes are registered: the service may wake their cells now.
		if err := h.wake.Run(serving, h.rt); err != nil {
			return nil, err
		}
	}
	if h.shards != nil {
		// Classes are registered: from now on, taking over a shard that
		// another process let go (a restart) schedules the alarms its
		// cells stored, whether or not a call comes for them.
		// With a node log, taking over a shard first folds the logs of
		// the processes that died (singlelog.go).
		if err := h.shards.Watch(serving, 0, h.learn); err != nil {
			return nil, err
		}
		h.shardLease.watching.Store(true)
	}
	return h, nil
}

func (h *Host) joinFleet(ctx context.Context, opts *cell.Options) (err error) {
	fc := h.cfg.Fleet
	addr := fc.Advertise
	if addr == "" && fc.PeerListener != nil {
		addr = fc.PeerListener.Addr().String()
	}
	// The wake index must be ready before this node's lease exists:
	// initializing it needs every node lease expired (celld's rule).
	if err := wake.Prepare(ctx, h.cfg.Bucket, h.cfg.Clock); err != nil {
		return err
	}
	useNodeLog := !fc.PerCellLog && ltxlog.IsMode(h.cfg.Mode)
	foldMetrics, err := metrics.NewNodeLog(h.cfg.MeterProvider, nil)
	if err != nil {
		return fmt.Errorf("host: metrics: %w", err)
	}
	folder := logFolder{nodelog.StoreFolder{Store: h.cfg.Bucket, Opts: nodelog.FoldOptions{Clock: h.cfg.Clock, Logger: h.log, Metrics: foldMetrics}}}
	if h.node, err = fleet.Join(ctx, fleet.Options{
		Store: h.cfg.Bucket, Node: fc.Node, Addr: addr, TTL: fc.TTL, Clock: h.cfg.Clock, Logger: h.log, MeterProvider: h.cfg.MeterProvider,
		NodeLog: useNodeLog, Folder: folder, SweepInterval: fc.SweepInterval,
	}); err != nil {
		return err
	}
	if useNodeLog {
		no := fc.NodeLog
		no.Store, no.Node, no.Generation, no.Confirmer = h.cfg.Bucket, h.node.ID(), h.node.Generation(), h.node
		no.Clock, no.Logger, no.MeterProvider = h.cfg.Clock, h.log, h.cfg.MeterProvider
		if h.nodeLog, err = nodelog.New(no); err != nil {
			return err
		}
	}
	h.name, h.peerAddr = h.node.ID(), addr
	opts.Lease = h.node
	if h.wake, err = wake.New(wake.Options{Store: h.cfg.Bucket, Node: h.node.ID(), Clock: h.cfg.Clock, Logger: h.log, Tick: fc.WakeTick, PollInterval: fc.WakePoll, MeterProvider: h.cfg.MeterProvider}); err != nil {
		return err
	}
	opts.Wake = h.wake
	// Local files are only a cache of what the bucket holds; keep each
	// node's apart so nodes sharing a machine never share a file.
	opts.DataDir = filepath.Join(h.cfg.DataDir, "nodes", h.node.ID())
	if fc.PeerListener == nil {
		return nil
	}
	if h.peerKey, err = peer.LoadOrCreateKey(ctx, h.cfg.Bucket, nil); err != nil {
		return err
	}
	h.peerRcv = &peer.Receiver{Key: h.peerKey, Node: h.node.ID(), Incarnation: h.node.Generation(), Clock: h.cfg.Clock}
	f := &peer.Forwarder{Key: h.peerKey, Self: h.name, Client: &http.Client{}, Timeout: 30 * time.Second, Clock: h.cfg.Clock}
	h.forward = func(ctx context.Context, to *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
		return f.Forward(ctx, peer.Target{Node: to.Owner, Incarnation: to.Incarnation, Addr: to.Addr}, w, r)
	}
	return nil
}

// logFolder is the fleet's LogFolder: core/nodelog's Fold on the bucket.
type logFolder struct{ f nodelog.StoreFolder }

func (l logFolder) FoldLog(ctx context.Context, node, generation string) error {
	_, err := l.f.Fold(ctx, node, generation)
	return err
}

// NodeLog is the node's node log (a fleet node's, or a single host
// process's), or nil when it has none (PerCellLog, another mode, or no
// ownership).
func (h *Host) NodeLog() *nodelog.Log { return h.nodeLog }

func (h *Host) openShards(ctx context.Context, opts *cell.Options) (err error) {
	// Processes sharing DataDir take cells by shard locks, so two of them
	// never write one database, and route calls for a shard another holds
	// to it over a local socket.
	dir := filepath.Join(h.cfg.DataDir, "shards")
	shardOpts := []shard.Option{shard.WithLogger(h.log)}
	if err := h.listenLocal(dir); err != nil {
		h.log.Warn("serving routed calls is off: other processes will answer 409 for this process's shards", "err", err)
	} else {
		shardOpts = append(shardOpts, shard.WithAddr("unix:"+h.localPath))
		router := &shard.Router{Self: fmt.Sprintf("local-%d", os.Getpid())}
		h.forward = func(ctx context.Context, to *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
			return router.Forward(ctx, to.Addr, w, r)
		}
	}
	if h.shards, err = shard.Open(dir, 16, shardOpts...); err != nil {
		return err
	}
	h.shardLease = &recoveringLease{Lease: h.shards, h: h}
	opts.Lease = h.shardLease
	if h.cfg.Ownership == SingleHost && ltxlog.IsMode(h.cfg.Mode) {
		return h.openLocalLog(ctx)
	}
	return nil
}

// serve starts the listeners: public, peer, local socket.
func (h *Host) serve() {
	if h.localLn != nil {
		// Accepting: a router that sees no 102 before the connection ends
		// knows the call never started here, and runs it elsewhere.
		h.local = h.server(shard.Accepting(h.internal))
		go h.local.Serve(h.localLn)
	}
	if h.cfg.Listener != nil {
		h.public = h.server(h.Handler())
		go func() { h.report(h.public.Serve(h.cfg.Listener)) }()
	}
	if ln := h.cfg.Fleet.PeerListener; ln != nil {
		h.peer = h.server(h.PeerHandler())
		go func() { h.report(h.peer.Serve(ln)) }()
	}
}

func (h *Host) report(err error) {
	if !errors.Is(err, http.ErrServerClosed) {
		h.errc <- err
	}
}

// Handler serves every registered class's routes, routing each request
// whose first cell call is for a cell another node or process owns to that
// owner (docs/embedding.md, "Routing"); Stub.Fetch reaches the owner on
// its own, inside a request or not. Before the routes, it answers 400 to a
// path with an empty or dot segment (which the mux would redirect to
// another cell's URL) and bounds the body to Limits.MaxBodyBytes.
func (h *Host) Handler() http.Handler { return h.handler }

// PeerHandler serves the same routes behind peer authentication, for this
// incarnation of this node only, plus the Fetches other nodes send here
// (FetchPath); nil unless the node is a fleet node with
// a peer listener. The host serves it on FleetConfig.PeerListener.
func (h *Host) PeerHandler() http.Handler {
	if h.peerRcv == nil {
		return nil
	}
	app := h.peerRcv.Handler(h.internal)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.lastPeerCall.Store(h.clk.Now().UnixNano())
		if h.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		app.ServeHTTP(w, r)
	})
}

// Runtime is the node's runtime.
func (h *Host) Runtime() *cell.Runtime { return h.rt }

// Node is the node's name: its fleet id, or "local".
func (h *Host) Node() string { return h.name }

// PeerAddr is the peer address a fleet node advertises to the others
// (FleetConfig.Advertise, or the peer listener's address), or "" when it
// has none (it then forwards no call to itself; see FleetConfig).
func (h *Host) PeerAddr() string { return h.peerAddr }

// Fenced is closed when a fleet node, or a single host process with a
// node log, self-fenced (it never serves again; run a new Host); nil,
// never ready, otherwise.
func (h *Host) Fenced() <-chan struct{} {
	switch {
	case h.node != nil:
		return h.node.Fenced()
	case h.localLog != nil && h.localLog.session != nil:
		return h.localLog.session.Fenced()
	}
	return nil
}

// FenceErr says why the node self-fenced, or nil.
func (h *Host) FenceErr() error {
	switch {
	case h.node != nil:
		return h.node.FenceErr()
	case h.localLog != nil && h.localLog.session != nil:
		return h.localLog.session.FenceErr()
	}
	return nil
}

// Err receives the error of a listener the host serves that stopped
// serving before Close.
func (h *Host) Err() <-chan error { return h.errc }

// Once its records are released and its node lease deleted, a node keeps
// its peer port open until no call has arrived for peerQuiet (at most
// peerLinger): a sender that read the records just before the release
// still gets an answer ("closing", not applied) instead of a connection
// reset it could not tell from a call lost mid-way.
const (
	peerQuiet  = 100 * time.Millisecond
	peerLinger = 2 * time.Second
)

// awaitPeerQuiet returns once the peer port has had no call for peerQuiet,
// after peerLinger, or when ctx ends.
func (h *Host) awaitPeerQuiet(ctx context.Context) {
	deadline := h.clk.Now().Add(peerLinger)
	for {
		quietFor := h.clk.Now().Sub(time.Unix(0, h.lastPeerCall.Load()))
		if quietFor >= peerQuiet || !h.clk.Now().Before(deadline) {
			return
		}
		t := h.clk.NewTimer(peerQuiet - quietFor)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Close shuts the node down in the shutdown order (see the package
// documentation) and returns what failed. Calls in flight on the host's
// listeners finish first; a second Close returns the first one's result.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() { h.closeErr = h.close(ctx) })
	return h.closeErr
}

func (h *Host) close(ctx context.Context) error {
	h.stopServing()
	h.draining.Store(true)
	var errs []error
	if h.public != nil {
		// The public port first: no new calls; those in flight finish.
		errs = append(errs, h.public.Shutdown(ctx))
		// Shutdown closes only the listeners Serve has begun on: one whose
		// goroutine has not reached Serve yet would be closed later, after
		// Close returned. Closing it here makes "closed" mean closed.
		h.cfg.Listener.Close()
	}
	// Hijacked, relayed sockets are not the server's to wait for: their
	// clients are told 1012 and reconnect to another node.
	h.wsRelays.closeAll()
	rtErr := h.rt.Close(ctx)
	errs = append(errs, rtErr)
	if h.wake != nil {
		// After the runtime: its last commits' publications finish first.
		errs = append(errs, h.wake.Close(ctx))
	}
	if h.nodeLog != nil && rtErr != nil {
		// A cell that did not close may hold acknowledged rows its prefix
		// lacks: releasing its record now would lose them. Fenced, the
		// node releases nothing and its log is recovered by the next node
		// (or process) to take one of its cells.
		h.nodeLog.Fence(fmt.Sprintf("the runtime did not close every cell (%v)", rtErr))
	}
	errs = append(errs, h.shutdownPorts(ctx))
	return errors.Join(errs...)
}

// shutdownPorts closes what the runtime reached the fleet or the other
// processes through, in order.
func (h *Host) shutdownPorts(ctx context.Context) error {
	var errs []error
	if h.local != nil {
		// After the runtime: until then, routed calls are answered (with
		// "closing" once it shuts down, which tells the router to wait for
		// the shard and run them itself), and the runtime has let every
		// shard go. Shutdown, not Close: a call the runtime ran still gets
		// its answer. Connections still queued on the socket are reset
		// unread; their routers saw no 102 and run the calls themselves.
		errs = append(errs, h.local.Shutdown(ctx))
	}
	if h.localLn != nil {
		h.localLn.Close()
		os.Remove(h.localPath)
	}
	if h.nodeLog != nil {
		// After the runtime: every cell tiered its rows before its
		// release. Before the node: its lease is sealed and deleted last.
		// A single host's session lock goes with it.
		err := h.nodeLog.Close(ctx, true)
		errs = append(errs, err, h.closeLocalLog(err))
	}
	if h.node != nil {
		errs = append(errs, h.node.Close(ctx))
	}
	if h.peer != nil {
		// After the release: see awaitPeerQuiet.
		h.awaitPeerQuiet(ctx)
		errs = append(errs, h.peer.Shutdown(ctx))
		h.cfg.Fleet.PeerListener.Close() // as the public listener's
	} else if h.cfg.Fleet.PeerListener != nil {
		h.cfg.Fleet.PeerListener.Close()
	}
	if h.shards != nil {
		errs = append(errs, h.shards.Close())
	}
	return errors.Join(errs...)
}
