package modernc

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// Options tune a Driver. The zero value is ready to use.
type Options struct {
	// Synchronous is PRAGMA synchronous for file databases: "OFF",
	// "NORMAL", "FULL" (the default: a commit that returned survives a
	// power loss) or "EXTRA". In WAL mode NORMAL syncs only at
	// checkpoints: a power loss may take the last commits but never
	// corrupts the file, which is enough when the durability log, not the
	// local file, is what makes a write durable.
	Synchronous string
	// CheckpointBytes is how large the WAL of a capturing connection may
	// grow before TakeCommits, having handed out the commits, checkpoints
	// it (SQLite then restarts the log at the beginning of the file, which
	// therefore stays about this size). 0 means 4 MiB.
	CheckpointBytes int64
	// StatementCache is how many idle prepared statements a connection
	// keeps. 0 means 32; negative disables the cache.
	StatementCache int
	// Logger receives problems that do not fail a call (a deferred
	// checkpoint that could not run). nil means slog.Default().
	Logger *slog.Logger
}

const (
	defaultCheckpointBytes = 4 << 20
	defaultStatementCache  = 32
)

func (o Options) resolved() (Options, error) {
	switch s := strings.ToUpper(o.Synchronous); s {
	case "":
		o.Synchronous = "FULL"
	case "OFF", "NORMAL", "FULL", "EXTRA":
		o.Synchronous = s
	default:
		return o, fmt.Errorf("modernc: Options.Synchronous %q is not OFF, NORMAL, FULL or EXTRA", o.Synchronous)
	}
	if o.CheckpointBytes <= 0 {
		o.CheckpointBytes = defaultCheckpointBytes
	}
	switch {
	case o.StatementCache == 0:
		o.StatementCache = defaultStatementCache
	case o.StatementCache < 0:
		o.StatementCache = 0
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Driver opens cell databases with modernc.org/sqlite. The zero value uses
// default Options.
type Driver struct {
	opts Options
}

// New returns a Driver with opts.
func New(opts Options) *Driver { return &Driver{opts: opts} }

var _ driver.Driver = (*Driver)(nil)

// Name is "modernc".
func (d *Driver) Name() string { return "modernc" }

// Capabilities: page capture (file databases), sessions and checkpoints.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{PageCapture: true, Sessions: true, Checkpoint: true, StatementCounters: true}
}

// Open opens or creates the database cfg names. The connection is a
// *Conn, or a *CapturingConn (a *Conn that also implements
// driver.PageCapturer) when cfg.PageCapture is set; both implement
// driver.Sessioner and driver.Checkpointer.
func (d *Driver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts, err := d.opts.resolved()
	if err != nil {
		return nil, err
	}
	if cfg.PageCapture && cfg.Path == "" {
		return nil, ErrCaptureNeedsFile
	}
	c, err := openConn(opts, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.PageCapture {
		return &CapturingConn{c}, nil
	}
	return c, nil
}

// CapturingConn is a connection opened with Config.PageCapture: a Conn
// that also satisfies driver.PageCapturer.
type CapturingConn struct {
	*Conn
}

var (
	_ driver.PageCapturer = (*CapturingConn)(nil)
	_ driver.Sessioner    = (*CapturingConn)(nil)
	_ driver.Checkpointer = (*CapturingConn)(nil)
)
