package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wake"
	"github.com/cellb/cellb/examples/chatroom"
	"github.com/cellb/cellb/examples/counter"
)

func serveCommand() command {
	return command{
		name:    "serve",
		summary: "run a node hosting the example counter app over HTTP",
		run: func(ctx context.Context, e *env, args []string) int {
			return serveCmd(ctx, e, args)
		},
	}
}

// serveUsage is serve's usage text; the choices of --durability come from
// modes.
func serveUsage(modes durability.Modes) string {
	return fmt.Sprintf(serveUsageText, modeChoices(modes))
}

const serveUsageText = `usage: cellb serve [--listen ADDR] [--data DIR] [--driver wasm|cgo|modernc]
                  [--idle D] [--max-cells N]
                  [--durability %s]
                  [--bucket URL --node NAME [--peer-listen ADDR --advertise ADDR] [--ttl D]
                   [--wake-tick D] [--wake-poll D]]

Without --bucket the node runs on the embedded default: cell databases
under DIR (the primary copy) and an LTX log in a local-files bucket at
DIR/bucket, from which an empty database is restored. Processes sharing
DIR take cells by shard locks and route calls for a shard another holds to
it over a local socket, so a new process started before the old one stops
takes over without losing a call (docs/single-host.md). With --bucket the
node joins a fleet on that bucket: it takes cells by celld's ownership
protocol, and the bucket wins over local files. With --peer-listen, calls
for cells another live node owns are forwarded to it. In a fleet, alarms
are published to the bucket's wake index (celld's format 2): every
--wake-poll a node wakes its own cells whose alarms are due, and the node
holding the waker role also wakes, every --wake-tick, due cells whose owner
is gone (docs/fleet.md).

--durability picks what goes to the bucket (docs/durability.md): ltx, the
LTX log celld reads (default); changeset, row changes in CellB's own format
(needs --driver modernc); backup, the whole database each minute and on
shutdown, acknowledging at once (a crash loses what came after the last
backup).`

// serveConfig is what `cellb serve` runs.
type serveConfig struct {
	Listen     string
	Data       string
	Driver     string
	Bucket     string
	Node       string
	PeerListen string
	Advertise  string
	TTL        time.Duration
	Idle       time.Duration
	ScriptName string
	Durability string
	WakeTick   time.Duration
	WakePoll   time.Duration
	MaxCells   int
}

func parseServe(args []string) (serveConfig, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c serveConfig
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8787", "HTTP address of the app")
	fs.StringVar(&c.Data, "data", ".cellb", "directory for cell databases (and the embedded bucket)")
	fs.StringVar(&c.Driver, "driver", "wasm", "SQLite driver: wasm, cgo or modernc")
	fs.StringVar(&c.Bucket, "bucket", "", "bucket URL to join a fleet on (file://, s3://, gs://, az://)")
	fs.StringVar(&c.Node, "node", "", "this node's id in the fleet (default: generated)")
	fs.StringVar(&c.PeerListen, "peer-listen", "", "address of the authenticated peer listener")
	fs.StringVar(&c.Advertise, "advertise", "", "peer address other nodes use to reach this one (default: --peer-listen)")
	fs.DurationVar(&c.TTL, "ttl", fleet.DefaultTTL, "node lease TTL")
	fs.DurationVar(&c.Idle, "idle", cell.DefaultIdleTimeout, "evict cells idle this long")
	fs.IntVar(&c.MaxCells, "max-cells", 0, "most cells kept open; the longest idle are evicted beyond it (0: from the file-descriptor limit, 3 per cell)")
	fs.StringVar(&c.Durability, "durability", "ltx", "what the bucket keeps: ltx, changeset (needs --driver modernc) or backup")
	fs.DurationVar(&c.WakeTick, "wake-tick", wake.DefaultTick, "fleet: period of the waker role (cells of dead owners are woken within about this long once due; the role's lease is 3 ticks)")
	fs.DurationVar(&c.WakePoll, "wake-poll", wake.DefaultPollInterval, "fleet: how often a node scans the wake index for its own due cells")
	fs.StringVar(&c.ScriptName, "script", "cellb-example", "deployment name that keys counter ids (celld's script_name)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, fmt.Errorf("unexpected argument %q", pos[0])
	}
	if c.Bucket == "" && (c.Node != "" || c.PeerListen != "" || c.Advertise != "") {
		return c, errors.New("--node, --peer-listen and --advertise need --bucket")
	}
	mode, err := durabilityModes().Lookup(c.Durability)
	if err != nil {
		return c, fmt.Errorf("--durability: %w", err)
	}
	if err := checkDriver(c.Driver); err != nil {
		return c, fmt.Errorf("--driver %s: %w", c.Driver, err)
	}
	if mode.NeedsSessions && c.Driver != "modernc" {
		return c, fmt.Errorf("--durability %s needs --driver modernc (the only driver with SQLite sessions)", mode.Name)
	}
	if c.Advertise != "" && c.PeerListen == "" {
		return c, errors.New("--advertise needs --peer-listen")
	}
	return c, nil
}

// pickLog opens the durability mode --durability names; none names the
// default, the registry's first (the LTX log).
func pickLog(name string, bucket store.Store, logger *slog.Logger) (durability.Log, error) {
	modes := durabilityModes()
	if name == "" {
		name = modes[0].Name
	}
	mode, err := modes.Lookup(name)
	if err != nil {
		return nil, err
	}
	return mode.Open(durability.OpenOptions{Store: bucket, Logger: logger})
}

// server is one running node: the runtime, its ports, and the app.
type server struct {
	cfg    serveConfig
	log    *slog.Logger
	bucket store.Store
	node   *fleet.Node   // nil on the embedded default
	wake   *wake.Service // the fleet's wake index; nil on the embedded default
	shards *shard.Lease  // the embedded default's shard locks; nil in a fleet
	// local serves calls other processes on this host route here for the
	// shards this process holds (nil in a fleet, or when the socket path
	// is too long for the platform).
	local     *http.Server
	localLn   net.Listener
	localPath string
	rt        *cell.Runtime
	app       *counter.App
	rooms     *chatroom.App
	// forward sends a call to its cell's owner (a fleet peer, or the
	// local process holding its shard); nil when calls are not routed.
	forward forwardFunc
	peerKey []byte
	// peer serves the peer listener (nil without --peer-listen); it is
	// shut down after the node's records are released.
	peer *http.Server
	// draining is set when shutdown starts: from then on every peer answer
	// closes its connection, so no connection sits idle when the peer port
	// finally closes (a request written to an idle connection as it is
	// closed could not be told apart from one lost mid-call).
	draining atomic.Bool
	// lastPeerCall is when the peer port last received a call (Unix ns).
	lastPeerCall atomic.Int64
}

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
func (s *server) awaitPeerQuiet(ctx context.Context) {
	deadline := time.Now().Add(peerLinger)
	for {
		quietFor := time.Since(time.Unix(0, s.lastPeerCall.Load()))
		if quietFor >= peerQuiet || !time.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(peerQuiet - quietFor):
		}
	}
}

// newServer wires a node. peerAddr is the advertised peer address ("" when
// the node serves no peer protocol).
func newServer(ctx context.Context, cfg serveConfig, peerAddr string, logger *slog.Logger) (*server, error) {
	drv, err := pickDriver(cfg.Driver, cfg.Bucket != "")
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: logger}
	bucketURL := cfg.Bucket
	if bucketURL == "" {
		dir := filepath.Join(cfg.Data, "bucket")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		bucketURL = dir
	}
	if s.bucket, err = openBucket(ctx, bucketMux(), bucketURL); err != nil {
		return nil, err
	}
	opts := cell.Options{
		ScriptName: cfg.ScriptName, Driver: drv, Logger: logger, IdleTimeout: cfg.Idle, MaxOpenCells: cfg.MaxCells,
		DataDir: filepath.Join(cfg.Data, "cells"),
	}
	if cfg.Bucket != "" {
		// The wake index must be ready before this node's lease exists:
		// initializing it needs every node lease expired (celld's rule).
		if err := wake.Prepare(ctx, s.bucket, nil); err != nil {
			store.Close(s.bucket)
			return nil, err
		}
		s.node, err = fleet.Join(ctx, fleet.Options{Store: s.bucket, Node: cfg.Node, Addr: peerAddr, TTL: cfg.TTL, Logger: logger})
		if err != nil {
			store.Close(s.bucket)
			return nil, err
		}
		opts.Lease = s.node
		if s.wake, err = wake.New(wake.Options{Store: s.bucket, Node: s.node.ID(), Logger: logger, Tick: cfg.WakeTick, PollInterval: cfg.WakePoll}); err != nil {
			s.shutdownPorts(ctx)
			return nil, err
		}
		opts.Wake = s.wake
		// Local files are only a cache of what the bucket holds; keep each
		// node's apart so nodes sharing a machine never share a file.
		opts.DataDir = filepath.Join(cfg.Data, "nodes", s.node.ID())
		if peerAddr != "" {
			if s.peerKey, err = peer.LoadOrCreateKey(ctx, s.bucket, nil); err != nil {
				s.shutdownPorts(ctx)
				return nil, err
			}
		}
	} else {
		// Processes sharing --data take cells by shard locks, so two of
		// them never write one database, and route calls for a shard
		// another holds to it over a local socket.
		shardDir := filepath.Join(cfg.Data, "shards")
		shardOpts := []shard.Option{shard.WithLogger(logger)}
		if err := s.listenLocal(shardDir); err != nil {
			logger.Warn("serving routed calls is off: other processes will answer 409 for this process's shards", "err", err)
		} else if s.localLn != nil {
			shardOpts = append(shardOpts, shard.WithAddr("unix:"+s.localPath))
		}
		if s.shards, err = shard.Open(shardDir, 16, shardOpts...); err != nil {
			s.shutdownPorts(ctx)
			return nil, err
		}
		opts.Lease = s.shards
	}
	if opts.Log, err = pickLog(cfg.Durability, s.bucket, logger); err != nil {
		s.shutdownPorts(ctx)
		return nil, err
	}
	if s.rt, err = cell.New(opts); err != nil {
		s.shutdownPorts(ctx)
		return nil, err
	}
	nodeName := "local"
	if s.node != nil {
		nodeName = s.node.ID()
	}
	if s.app, err = counter.Register(s.rt, counter.Options{Node: nodeName, Route: s.route}); err != nil {
		s.rt.Close(ctx)
		s.shutdownPorts(ctx)
		return nil, err
	}
	if s.rooms, err = chatroom.Register(s.rt, chatroom.Options{Route: s.route}); err != nil {
		s.rt.Close(ctx)
		s.shutdownPorts(ctx)
		return nil, err
	}
	if s.wake != nil {
		// Classes are registered: the service may wake their cells now.
		if err := s.wake.Run(ctx, s.rt); err != nil {
			s.rt.Close(ctx)
			s.shutdownPorts(ctx)
			return nil, err
		}
	}
	if s.shards != nil {
		// Classes are registered: from now on, taking over a shard that
		// another process let go (a restart) schedules the alarms its
		// cells stored, whether or not a call comes for them. Watching
		// ends with ctx (serveCmd's ends on SIGTERM), before shutdown.
		if err := s.shards.Watch(ctx, 0, s.rt.LearnAlarms); err != nil {
			s.rt.Close(ctx)
			s.shutdownPorts(ctx)
			return nil, err
		}
	}
	if s.shards != nil && s.localLn != nil {
		router := &shard.Router{Self: fmt.Sprintf("local-%d", os.Getpid())}
		s.forward = func(ctx context.Context, to *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
			return router.Forward(ctx, to.Addr, w, r)
		}
		// Accepting: a router that sees no 102 before the connection ends
		// knows the call never started here, and runs it elsewhere.
		s.local = &http.Server{Handler: shard.Accepting(s.handler()), ReadHeaderTimeout: 10 * time.Second}
		go s.local.Serve(s.localLn)
	}
	if s.peerKey != nil {
		f := &peer.Forwarder{Key: s.peerKey, Self: nodeName, Client: &http.Client{Timeout: 30 * time.Second}}
		s.forward = func(ctx context.Context, to *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
			return f.Forward(ctx, peer.Target{Node: to.Owner, Incarnation: to.Incarnation, Addr: to.Addr}, w, r)
		}
	}
	return s, nil
}

// route is the apps' Route hook: it runs a call here or at its cell's
// owner (see callRouted).
func (s *server) route(w http.ResponseWriter, r *http.Request, body []byte, call func() error) (bool, error) {
	return callRouted(w, r, body, s.forward, call)
}

// handler is the public app.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	s.app.Routes(mux)
	s.rooms.Routes(mux)
	return mux
}

// peerHandler is the same app behind peer authentication, for this
// incarnation of this node only.
func (s *server) peerHandler() http.Handler {
	rc := &peer.Receiver{Key: s.peerKey, Node: s.node.ID(), Incarnation: s.node.Generation()}
	app := rc.Handler(s.handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.lastPeerCall.Store(time.Now().UnixNano())
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		app.ServeHTTP(w, r)
	})
}

// close shuts the node down in order: the runtime (drains events, waits for
// durability, releases each cell's record as the cell closes), then the
// fleet membership (releases every cell still owned, deletes the node
// lease), then the peer listener, then the bucket. The peer listener stays
// open until every record is released and it has been quiet for a moment
// (awaitPeerQuiet): until then another node may still forward a call here,
// and it is answered "closing" (not applied), so the sender waits for the
// release and runs the call itself instead of answering 409.
func (s *server) close(ctx context.Context) error {
	err := s.rt.Close(ctx)
	if s.wake != nil {
		// After the runtime: its last commits' publications finish first.
		err = errors.Join(err, s.wake.Close(ctx))
	}
	return errors.Join(err, s.shutdownPorts(ctx))
}

// maxSocketPath is the longest unix socket path every supported platform
// accepts (sun_path is 104 bytes on the BSDs and macOS, 108 on Linux).
const maxSocketPath = 100

// listenLocal opens the unix socket other processes on this host route
// calls to (mode 0600: only this user's processes may send them). A path
// too long for a socket leaves routing off.
func (s *server) listenLocal(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	removeDeadSockets(dir)
	var tag [4]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return err
	}
	// Absolute: other processes, with other working directories, read it
	// from the holder record.
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s%d-%x.sock", shard.SocketPrefix, os.Getpid(), tag)))
	if err != nil {
		return err
	}
	if len(path) > maxSocketPath {
		return fmt.Errorf("socket path %s is longer than %d bytes", path, maxSocketPath)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return err
	}
	s.localLn, s.localPath = ln, path
	return nil
}

// removeDeadSockets deletes the sockets of processes that died without
// removing theirs: nothing accepts on them any more.
func removeDeadSockets(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "serve-*.sock")) // before SocketPrefix
	paths, _ := filepath.Glob(filepath.Join(dir, shard.SocketPrefix+"*.sock"))
	for _, p := range append(old, paths...) {
		c, err := net.DialTimeout("unix", p, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			os.Remove(p)
		}
	}
}

func (s *server) shutdownPorts(ctx context.Context) error {
	var errs []error
	if s.local != nil {
		// After the runtime: until then, routed calls are answered (with
		// "closing" once it shuts down, which tells the router to wait for
		// the shard and run them itself), and the runtime has let every
		// shard go. Shutdown, not Close: a call the runtime ran still gets
		// its answer. Connections still queued on the socket are reset
		// unread; their routers saw no 102 and run the calls themselves.
		errs = append(errs, s.local.Shutdown(ctx))
	}
	if s.localLn != nil {
		s.localLn.Close()
		os.Remove(s.localPath)
	}
	if s.node != nil {
		errs = append(errs, s.node.Close(ctx))
	}
	if s.peer != nil {
		// After the release: see close.
		s.awaitPeerQuiet(ctx)
		errs = append(errs, s.peer.Shutdown(ctx))
	}
	if s.shards != nil {
		errs = append(errs, s.shards.Close())
	}
	errs = append(errs, store.Close(s.bucket))
	return errors.Join(errs...)
}

// exitFenced is the exit status of a node that self-fenced (celld's too).
const exitFenced = 3

func serveCmd(ctx context.Context, e *env, args []string) int {
	cfg, err := parseServe(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(e.stderr, serveUsage(durabilityModes()))
			return 0
		}
		fmt.Fprintf(e.stderr, "cellb serve: %v\n%s\n", err, serveUsage(durabilityModes()))
		return 2
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "cellb serve: %v\n", err)
		return 1
	}
	var peerLn net.Listener
	peerAddr := ""
	if cfg.PeerListen != "" {
		if peerLn, err = net.Listen("tcp", cfg.PeerListen); err != nil {
			ln.Close()
			fmt.Fprintf(e.stderr, "cellb serve: %v\n", err)
			return 1
		}
		peerAddr = cfg.Advertise
		if peerAddr == "" {
			peerAddr = peerLn.Addr().String()
		}
	}
	s, err := newServer(ctx, cfg, peerAddr, logger)
	if err != nil {
		ln.Close()
		if peerLn != nil {
			peerLn.Close()
		}
		fmt.Fprintf(e.stderr, "cellb serve: %v\n", oneLine(err))
		return 1
	}
	public := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	servers := []*http.Server{public}
	listeners := []net.Listener{ln}
	if peerLn != nil {
		s.peer = &http.Server{Handler: s.peerHandler(), ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, s.peer)
		listeners = append(listeners, peerLn)
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	attrs := []any{"listen", ln.Addr().String(), "driver", cfg.Driver, "data", cfg.Data}
	if s.node != nil {
		attrs = append(attrs, "bucket", cfg.Bucket, "node", s.node.ID(), "peer", peerAddr)
	}
	logger.Info("cellb serve: listening", attrs...)
	fmt.Fprintf(e.stdout, "listening on http://%s\n", ln.Addr())
	code := 0
	var fenced <-chan struct{} // nil (never ready) on the embedded default
	if s.node != nil {
		fenced = s.node.Fenced()
	}
	select {
	case <-ctx.Done():
		logger.Info("cellb serve: shutting down; releasing cells")
	case err := <-errc:
		logger.Error("cellb serve: listener failed", "err", err)
		code = 1
	case <-fenced:
		// As celld: a fenced node never serves again; its supervisor
		// restarts it as a new node.
		logger.Error("cellb serve: SELF-FENCE: exiting with status 3 so that a supervisor restarts the node", "err", s.node.FenceErr())
		code = exitFenced
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The public port first (no new calls; those in flight finish); the
	// peer port only once the records are released (s.close).
	s.draining.Store(true)
	_ = public.Shutdown(shutdownCtx)
	if err := s.close(shutdownCtx); err != nil {
		logger.Error("cellb serve: shutdown", "err", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
