package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/host"
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

// server is one running node: the host and the example apps it serves.
type server struct {
	h      *host.Host
	bucket store.Store
	app    *counter.App
	rooms  *chatroom.App
}

// newServer wires a node from cfg: the flags become a host.Config. ln and
// peerLn, if not nil, are the public and peer listeners; the host serves
// them and closes them in its shutdown order.
func newServer(ctx context.Context, cfg serveConfig, ln, peerLn net.Listener, logger *slog.Logger) (*server, error) {
	mode, err := durabilityModes().Lookup(cmp.Or(cfg.Durability, durabilityModes()[0].Name))
	if err != nil {
		return nil, err
	}
	drv, err := pickDriver(cfg.Driver, nodeSync(cfg.Bucket != "", mode))
	if err != nil {
		return nil, err
	}
	s := &server{}
	hc := host.Config{
		Driver: drv, DataDir: cfg.Data, Mode: mode, Ownership: host.SingleHost,
		Listener: ln, ScriptName: cfg.ScriptName, IdleTimeout: cfg.Idle, MaxOpenCells: cfg.MaxCells, Logger: logger,
		Classes: func(su *host.Setup) (err error) {
			if s.app, err = counter.Register(su.Runtime, counter.Options{Node: su.Node, Route: su.Route}); err != nil {
				return err
			}
			if s.rooms, err = chatroom.Register(su.Runtime, chatroom.Options{Route: su.Route}); err != nil {
				return err
			}
			s.app.Routes(su.Mux)
			s.rooms.Routes(su.Mux)
			return nil
		},
	}
	bucketURL := cfg.Bucket
	if bucketURL == "" {
		// The embedded default: a local-files bucket under --data.
		bucketURL = filepath.Join(cfg.Data, "bucket")
		if err := os.MkdirAll(bucketURL, 0o755); err != nil {
			return nil, err
		}
	} else {
		hc.Ownership = host.Fleet
		hc.Fleet = host.FleetConfig{Node: cfg.Node, TTL: cfg.TTL, PeerListener: peerLn, Advertise: cfg.Advertise,
			WakeTick: cfg.WakeTick, WakePoll: cfg.WakePoll}
	}
	if s.bucket, err = openBucket(ctx, bucketMux(), bucketURL); err != nil {
		return nil, err
	}
	hc.Bucket = s.bucket
	if s.h, err = host.New(ctx, hc); err != nil {
		store.Close(s.bucket)
		return nil, err
	}
	return s, nil
}

// handler is the public app.
func (s *server) handler() http.Handler { return s.h.Handler() }

// close shuts the node down in the host's order, then closes the bucket.
func (s *server) close(ctx context.Context) error {
	return errors.Join(s.h.Close(ctx), store.Close(s.bucket))
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
	if cfg.PeerListen != "" {
		if peerLn, err = net.Listen("tcp", cfg.PeerListen); err != nil {
			ln.Close()
			fmt.Fprintf(e.stderr, "cellb serve: %v\n", err)
			return 1
		}
	}
	s, err := newServer(ctx, cfg, ln, peerLn, logger)
	if err != nil {
		ln.Close()
		if peerLn != nil {
			peerLn.Close()
		}
		fmt.Fprintf(e.stderr, "cellb serve: %v\n", oneLine(err))
		return 1
	}
	attrs := []any{"listen", ln.Addr().String(), "driver", cfg.Driver, "data", cfg.Data}
	if cfg.Bucket != "" {
		attrs = append(attrs, "bucket", cfg.Bucket, "node", s.h.Node(), "peer", cmp.Or(cfg.Advertise, addrOf(peerLn)))
	}
	logger.Info("cellb serve: listening", attrs...)
	fmt.Fprintf(e.stdout, "listening on http://%s\n", ln.Addr())
	code := 0
	select {
	case <-ctx.Done():
		logger.Info("cellb serve: shutting down; releasing cells")
	case err := <-s.h.Err():
		logger.Error("cellb serve: listener failed", "err", err)
		code = 1
	case <-s.h.Fenced():
		// As celld: a fenced node never serves again; its supervisor
		// restarts it as a new node.
		logger.Error("cellb serve: SELF-FENCE: exiting with status 3 so that a supervisor restarts the node", "err", s.h.FenceErr())
		code = exitFenced
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The host's order: the public port first (no new calls; those in
	// flight finish), the peer port last.
	if err := s.close(shutdownCtx); err != nil {
		logger.Error("cellb serve: shutdown", "err", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// addrOf is ln's address, or "" without one.
func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}
