//go:build cgo

package cgo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/cellb/cellb/core/driver"
)

// Synchronous is SQLite's synchronous setting for a WAL-mode database.
type Synchronous int

const (
	// SyncFull syncs the WAL at every commit: a commit that returned
	// survives a power loss. The default.
	SyncFull Synchronous = iota
	// SyncNormal syncs only at checkpoints: a power loss may drop the last
	// commits (never corrupt the file). Fine when a durability log or
	// backup, not the local file, is what makes writes durable.
	SyncNormal
	// SyncExtra is SyncFull plus a sync of the directory when the WAL is
	// reset.
	SyncExtra
)

func (s Synchronous) pragma() (string, error) {
	switch s {
	case SyncFull:
		return "FULL", nil
	case SyncNormal:
		return "NORMAL", nil
	case SyncExtra:
		return "EXTRA", nil
	}
	return "", fmt.Errorf("cgo: unknown Synchronous value %d", int(s))
}

// Defaults for Driver's zero fields.
const (
	DefaultCheckpointBytes = 4 << 20
	DefaultBusyTimeout     = 5 * time.Second
)

// Driver opens cell databases with mattn/go-sqlite3. The zero value is
// ready to use; fields are read at Open.
type Driver struct {
	// Synchronous: SyncFull unless set.
	Synchronous Synchronous
	// CheckpointBytes: with page capture, once the commits in the WAL have
	// been read and the WAL holds at least this many bytes, the driver
	// checkpoints it (RESTART: SQLite then rewrites the log from its start,
	// so the file stays about this size). Zero means DefaultCheckpointBytes.
	CheckpointBytes int64
	// BusyTimeout bounds how long a statement waits for a lock another
	// connection holds. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// New returns a Driver with default settings.
func New() *Driver { return &Driver{} }

var _ driver.Driver = (*Driver)(nil)

// Name is "cgo".
func (d *Driver) Name() string { return "cgo" }

// Capabilities: page capture (file databases) and checkpoints; no sessions.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{PageCapture: true, Sessions: false, Checkpoint: true}
}

// ErrCaptureNeedsFile is returned by Open for page capture on an in-memory
// database: capture reads the WAL file, and an in-memory database has none.
var ErrCaptureNeedsFile = errors.New("cgo: page capture needs a file database (Config.Path is empty)")

// Open opens (creating if needed) the database at cfg.Path in WAL mode, or
// a private in-memory database when cfg.Path is empty.
func (d *Driver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.PageCapture && cfg.Path == "" {
		return nil, ErrCaptureNeedsFile
	}
	s, err := d.settings(cfg)
	if err != nil {
		return nil, err
	}
	c := &conn{s: s}
	if err := c.open(); err != nil {
		c.Close() // releases the callback handle
		return nil, err
	}
	if cfg.PageCapture {
		return &captureConn{c}, nil
	}
	return c, nil
}

// settings is what a connection needs to (re)open its database.
type settings struct {
	path            string // absolute; "" for in-memory
	dsn             string
	capture         bool
	checkpointBytes int64
	pages           *driver.PagePool // where captured pages are copied to
}

func (d *Driver) settings(cfg driver.Config) (settings, error) {
	sync, err := d.Synchronous.pragma()
	if err != nil {
		return settings{}, err
	}
	busy := d.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	cb := d.CheckpointBytes
	if cb <= 0 {
		cb = DefaultCheckpointBytes
	}
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_sync", sync)
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	// mattn caches prepared statements only when asked to.
	q.Set("_stmt_cache_size", "64")
	pages := cfg.Pages
	if pages == nil && cfg.PageCapture {
		pages = new(driver.PagePool)
	}
	s := settings{capture: cfg.PageCapture, checkpointBytes: cb, pages: pages}
	if cfg.Path == "" {
		s.dsn = "file::memory:?" + q.Encode()
		return s, nil
	}
	abs, err := filepath.Abs(cfg.Path)
	if err != nil {
		return settings{}, fmt.Errorf("cgo: database path: %w", err)
	}
	s.path = abs
	s.dsn = "file:" + uriPath(abs) + "?" + q.Encode()
	return s, nil
}

// uriPath escapes a file path for a SQLite URI filename, where '?', '#' and
// '%' would otherwise end or alter the path.
func uriPath(p string) string {
	var b strings.Builder
	for _, r := range filepath.ToSlash(p) {
		switch r {
		case '?', '#', '%':
			fmt.Fprintf(&b, "%%%02X", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
