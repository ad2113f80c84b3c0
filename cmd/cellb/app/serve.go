package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/cli"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/health"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wake"
	"github.com/cellb/cellb/examples/counter"
	"github.com/cellb/cellb/examples/demo"
)

func serveCommand() appCommand {
	return command("serve", "run a node hosting the example apps (counter, chat rooms, bank, R2 images) over HTTP",
		func(ctx context.Context, e *env, args []string) int {
			return serveCmd(ctx, e, args)
		})
}

const serveAbout = `Runs a node hosting the example apps (docs/examples.md). Without
--bucket, on the embedded default: cell databases under --data-dir (the
primary copy) and an LTX log in a files bucket at <data-dir>/bucket,
written through a node log per process (--node-log); processes sharing
--data-dir take cells by shard locks and route calls to each other
(docs/single-host.md). With --bucket the node joins a fleet on
that bucket: cells are taken by celld's ownership protocol, the bucket wins
over local files, calls for cells another node owns are forwarded over
--peer-listen, and alarms are woken through the bucket's wake index
(docs/fleet.md). --durability: docs/durability.md; --admin-listen:
docs/metrics.md; every flag: docs/cli.md.

Exit status: 0 after a clean shutdown (SIGINT or SIGTERM); 1 when the node
could not start or a listener failed; 2 bad usage; 3 the node self-fenced
(a supervisor should restart it).`

// serveFlags declares serve's flags on a new cmdLine, into c; the choices
// of --durability come from modes.
func serveFlags(c *serveConfig, modes durability.Modes) *cli.Command {
	cl := newCmdLine("serve", "", serveAbout, 0, 0, "no arguments")
	fs := cl.Flags
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8787", "HTTP `address` of the app")
	fs.StringVar(&c.Data, "data-dir", ".cellb", "`directory` for cell databases (and the embedded bucket)")
	cl.Alias("data", "data-dir")
	fs.StringVar(&c.Driver, "driver", "wasm", "SQLite `driver`: wasm, cgo or modernc")
	fs.StringVar(&c.Bucket, "bucket", "", "bucket `URL` to join a fleet on (file://, s3://, gs://, az://)")
	fs.StringVar(&c.Node, "node", "", "this node's `id` in the fleet (default: generated)")
	fs.StringVar(&c.PeerListen, "peer-listen", "", "`address` of the authenticated peer listener (needs --bucket)")
	fs.StringVar(&c.Advertise, "advertise", "", "peer `address` other nodes use to reach this one (default: --peer-listen)")
	fs.DurationVar(&c.TTL, "ttl", fleet.DefaultTTL, "fleet: node lease TTL")
	fs.DurationVar(&c.Idle, "idle", cell.DefaultIdleTimeout, "evict cells idle this long")
	fs.DurationVar(&c.IdleConn, "idle-conn", cell.DefaultIdleConnTimeout, "close the database connection of open cells idle this long (negative: never)")
	fs.DurationVar(&c.AlarmResidency, "alarm-residency", cell.DefaultAlarmResidency, "keep an idle cell in memory while its alarm is due within this long (negative: never; a chat room with sockets then hibernates between messages)")
	fs.IntVar(&c.MaxCells, "max-cells", 0, "most cells kept open; the longest idle are evicted beyond it (0: from the file-descriptor limit, 3 per cell)")
	fs.StringVar(&c.Durability, "durability", modes[0].Name, "the durability `mode` (changeset needs --driver modernc), what the bucket keeps: "+modeChoices(modes))
	fs.DurationVar(&c.WakeTick, "wake-tick", wake.DefaultTick, "fleet: period of the waker role (cells of dead owners are woken within about this long once due; the role's lease is 3 ticks)")
	fs.DurationVar(&c.WakePoll, "wake-poll", wake.DefaultPollInterval, "fleet: how often a node scans the wake index for its own due cells")
	fs.DurationVar(&c.Retention, "retention", ltxlog.DefaultRetention, "ltx mode: keep every durable state restorable exactly this long (bookmarks; negative: none, compaction deletes what it merges)")
	fs.BoolVar(&c.NodeLog, "node-log", true, "ltx mode: write every cell's commits through one node log per process (a bundle per flush; docs/durability.md); false: per-cell uploads")
	fs.StringVar(&c.ScriptName, "script-name", defaultScriptName, "deployment `name` that keys counter ids (celld's script_name)")
	cl.Alias("script", "script-name")
	fs.StringVar(&c.AdminListen, "admin-listen", "", "`address` of the admin endpoints: /metrics (Prometheus text), /healthz, /readyz (default: none; docs/metrics.md)")
	return cl
}

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
	IdleConn   time.Duration
	// AlarmResidency is cell.Options.AlarmResidency (zero: the default).
	AlarmResidency time.Duration
	ScriptName     string
	Durability     string
	WakeTick       time.Duration
	WakePoll       time.Duration
	MaxCells       int
	NodeLog        bool
	// Retention is host.Config.Retention.
	Retention time.Duration
	// AdminListen is the address of the admin endpoints (/metrics,
	// /healthz, /readyz); empty serves none and records no metrics.
	AdminListen string

	// meters receives the node's metrics (nil: none); not a flag.
	meters metric.MeterProvider
	// mux opens --bucket (nil: the adapters cellb ships); not a flag.
	mux *store.URLMux
}

// parseServe parses serve's command line; its errors are *cli.UsageError,
// or cli.ErrHelp.
func parseServe(args []string) (serveConfig, error) {
	var c serveConfig
	cl := serveFlags(&c, durabilityModes())
	pos, err := cl.ParseArgs(args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("unexpected argument %q: serve takes flags only", pos[0])
	}
	if err := checkServe(c); err != nil {
		return c, &cli.UsageError{Msg: err.Error()}
	}
	return c, nil
}

func checkServe(c serveConfig) error {
	if c.Bucket == "" && (c.Node != "" || c.PeerListen != "" || c.Advertise != "") {
		return errors.New("--node, --peer-listen and --advertise need --bucket")
	}
	mode, err := durabilityModes().Lookup(c.Durability)
	if err != nil {
		return fmt.Errorf("--durability: %w", err)
	}
	if err := checkDriver(c.Driver); err != nil {
		return fmt.Errorf("--driver %s: %w", c.Driver, err)
	}
	if mode.NeedsSessions && c.Driver != "modernc" {
		return fmt.Errorf("--durability %s needs --driver modernc (the only driver with SQLite sessions)", mode.Name)
	}
	if c.Advertise != "" && c.PeerListen == "" {
		return errors.New("--advertise needs --peer-listen")
	}
	return nil
}

// server is one running node: the host and the example counter it serves
// (with the other example apps, examples/demo).
type server struct {
	h      *host.Host
	bucket store.Store
	app    *counter.App
}

// newServer wires a node from cfg: the flags become a host.Config. ln and
// peerLn, if not nil, are the public and peer listeners; the host serves
// them and closes them in its shutdown order.
func newServer(ctx context.Context, cfg serveConfig, ln, peerLn net.Listener, logger *slog.Logger) (*server, error) {
	mode, err := durabilityModes().Lookup(cmp.Or(cfg.Durability, durabilityModes()[0].Name))
	if err != nil {
		return nil, err
	}
	own := host.SingleHost
	if cfg.Bucket != "" {
		own = host.Fleet
	}
	drv, err := pickDriver(cfg.Driver, host.Synchronous(own, mode))
	if err != nil {
		return nil, err
	}
	s := &server{}
	hc := host.Config{
		Driver: drv, DataDir: cfg.Data, Mode: mode, Retention: cfg.Retention, Ownership: host.SingleHost,
		Listener: ln, ScriptName: cfg.ScriptName, IdleTimeout: cfg.Idle, IdleConnTimeout: cfg.IdleConn, MaxOpenCells: cfg.MaxCells, Logger: logger,
		AlarmResidency: cfg.AlarmResidency,
		SingleHost:     host.SingleHostConfig{PerCellLog: !cfg.NodeLog},
		R2:             demo.R2Bindings(),
		MeterProvider:  cfg.meters,
		Classes: func(su *host.Setup) error {
			apps, err := demo.Register(su)
			if err == nil {
				s.app = apps.Counter
			}
			return err
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
			WakeTick: cfg.WakeTick, WakePoll: cfg.WakePoll, PerCellLog: !cfg.NodeLog}
	}
	if s.bucket, err = openBucket(ctx, orDefault(cfg.mux), bucketURL); err != nil {
		return nil, err
	}
	hc.Bucket = s.bucket
	if s.h, err = host.New(ctx, hc); err != nil {
		store.Close(s.bucket)
		return nil, err
	}
	return s, nil
}

// exitFenced is the exit status of a node that self-fenced (celld's too).
const exitFenced = 3

func serveCmd(ctx context.Context, e *env, args []string) int {
	cfg, err := parseServe(args)
	cfg.mux = e.buckets()
	cl := serveFlags(&serveConfig{}, durabilityModes())
	switch {
	case errors.Is(err, cli.ErrHelp):
		cl.Usage(e.stdout)
		return cli.ExitOK
	case err != nil:
		return cl.UsageErr(e.stderr, "%v", err)
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var admin *health.Server
	if cfg.AdminListen != "" {
		// Up before the node, so /healthz answers and /readyz says
		// "starting" during the start-up probe and the join; closed after
		// the node, so /readyz says 503 while it shuts down.
		var pm *prometheusMetrics
		if admin, pm, err = startAdmin(cfg.AdminListen, logger); err != nil {
			fmt.Fprintf(e.stderr, "cellb serve: --admin-listen: %v\n", err)
			return 1
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			admin.Close(ctx)
			pm.provider.Shutdown(ctx)
		}()
		cfg.meters = pm.provider
		fmt.Fprintf(e.stdout, "admin on http://%s\n", admin.Addr())
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return cl.Fail(e.stderr, err)
	}
	var peerLn net.Listener
	if cfg.PeerListen != "" {
		if peerLn, err = net.Listen("tcp", cfg.PeerListen); err != nil {
			ln.Close()
			return cl.Fail(e.stderr, err)
		}
	}
	s, err := newServer(ctx, cfg, ln, peerLn, logger)
	if err != nil {
		ln.Close()
		if peerLn != nil {
			peerLn.Close()
		}
		return cl.Fail(e.stderr, err)
	}
	attrs := []any{"listen", ln.Addr().String(), "driver", cfg.Driver, "data", cfg.Data}
	if cfg.Bucket != "" {
		attrs = append(attrs, "bucket", cfg.Bucket, "node", s.h.Node(), "peer", s.h.PeerAddr())
	}
	if admin != nil {
		admin.SetReady(s.h)
		attrs = append(attrs, "admin", admin.Addr().String())
	}
	logger.Info("cellb serve: listening", attrs...)
	fmt.Fprintf(e.stdout, "listening on http://%s\n", ln.Addr())
	// Host.Run closes in the host's order: the public port first (no new
	// calls; those in flight finish), the peer port last.
	err = s.h.Run(ctx)
	if cerr := store.Close(s.bucket); cerr != nil {
		logger.Error("cellb serve: closing the bucket", "err", cerr)
		err = errors.Join(err, cerr)
	}
	var fenced *fleet.FencedError
	switch {
	case errors.As(err, &fenced), errors.Is(err, nodelog.ErrFenced):
		// As celld: a fenced node never serves again; its supervisor
		// restarts it as a new node.
		return exitFenced
	case err != nil:
		return cli.ExitFailed
	}
	return cli.ExitOK
}
