// Package wasm is CellB's default SQLite driver, built on
// github.com/ncruces/go-sqlite3: SQLite compiled to WebAssembly and
// translated to Go, so it needs no cgo and no C toolchain.
//
// Every database is opened through a Go VFS that wraps the operating
// system's (or memdb, for in-memory databases) and watches what SQLite
// writes. With Config.PageCapture, that is how commits are captured:
//
//   - In rollback-journal mode (the default, JournalPersist), SQLite
//     changes the main file only under its exclusive lock and drops the
//     lock when the transaction ends; at that moment the driver reads the
//     pages the transaction wrote. The header's change counter tells a
//     commit from a rollback.
//   - In WAL mode (WithJournalMode(JournalWAL), file databases only), each
//     commit ends with a marked frame in the log; once it is written the
//     driver reads the transaction's frames back from the log.
//
// Either way pages are copied when their transaction commits, and replaying
// the commits onto the previous image reproduces Serialize byte for byte.
// The driver has no session extension (this SQLite build lacks it), and
// checkpoints only in WAL mode.
package wasm

import (
	"context"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// Name is the driver's stable name.
const Name = "wasm"

// JournalMode is a rollback-journal mode for the driver's databases.
type JournalMode string

// The journal modes the driver accepts. The three rollback-journal modes
// differ in what SQLite does with the journal file when a transaction
// ends; each commit waits for the journal and the database to reach the
// disk (two syncs with synchronous=NORMAL). JournalWAL appends each commit
// to a write-ahead log instead, which with synchronous=NORMAL needs no
// sync per commit (see docs/drivers-wasm.md for the trade-off).
const (
	JournalDelete   JournalMode = "delete"
	JournalTruncate JournalMode = "truncate"
	JournalPersist  JournalMode = "persist"
	JournalWAL      JournalMode = "wal"
)

// DefaultJournalMode keeps the journal file and invalidates its header at
// each commit, which avoids creating and deleting a file per transaction.
const DefaultJournalMode = JournalPersist

// Driver opens SQLite databases with github.com/ncruces/go-sqlite3. It
// holds only its options; it is safe for concurrent use.
type Driver struct {
	journal   JournalMode
	pragmas   []string
	exclusive bool
	// verifyWAL (tests only) makes WAL capture check each commit's frames
	// against the log file.
	verifyWAL bool
}

// Option configures a Driver.
type Option func(*Driver)

// WithJournalMode selects the rollback-journal mode (default
// DefaultJournalMode).
func WithJournalMode(m JournalMode) Option { return func(d *Driver) { d.journal = m } }

// WithPragmas adds PRAGMA settings (without the PRAGMA keyword, e.g.
// "synchronous=NORMAL" or "cache_size=-8000") that the driver runs, in
// order, each time it opens a database, including the reopen after
// Restore. A setting made with Exec is lost at Restore; one given here is
// not.
func WithPragmas(pragmas ...string) Option {
	return func(d *Driver) { d.pragmas = append(d.pragmas, pragmas...) }
}

// WithExclusiveLocking makes a WAL-mode driver open every file database
// with locking_mode=EXCLUSIVE, set before SQLite first reads the file. The
// connection then takes its file lock at the first read and holds it until
// it closes, and SQLite keeps the log's index in the connection's own
// memory: no -shm file is created, mapped or locked, and no transaction
// takes or drops a lock. The log file is kept when the connection closes,
// emptied, so opening an existing database creates no file (about a third
// of the CPU of an open without the option, docs/benchmarks.md). The
// price: while the connection is open no other connection, in this process
// or another, can read or write the file (its open fails with ErrInUse,
// wrapping SQLITE_BUSY, once the busy timeout has passed or its ctx ended).
// Use it when nothing but the connection touches the file while it is open
// (a cell's database under the cell runtime). A crash leaves the log behind
// as usual, and the next open replays it. It requires
// WithJournalMode(JournalWAL); in-memory databases are unaffected.
func WithExclusiveLocking() Option { return func(d *Driver) { d.exclusive = true } }

// New returns a driver with the given options.
func New(opts ...Option) *Driver {
	d := &Driver{journal: DefaultJournalMode}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Name returns "wasm".
func (d *Driver) Name() string { return Name }

// Capabilities declares page capture, and checkpoints in WAL mode.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{PageCapture: true, Checkpoint: d.journal == JournalWAL, StatementCounters: true}
}

// Open opens (creating if needed) the database at cfg.Path, or a private
// in-memory database when cfg.Path is empty. The directory of cfg.Path
// must exist.
func (d *Driver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	registerVFS()
	c := &Conn{drv: d, capture: cfg.PageCapture}
	if cfg.Path == "" {
		c.mem = true
	} else {
		p, err := absPath(cfg.Path)
		if err != nil {
			return nil, fmt.Errorf("drivers/wasm: database path %q: %w", cfg.Path, err)
		}
		c.path = p
	}
	c.auth.wal = c.walMode()
	c.auth.exclusive = c.exclusive()
	if c.capture {
		c.rec = &recorder{wal: c.walMode()}
		c.rec.log.verify = d.verifyWAL
	}
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (d *Driver) validate() error {
	switch d.journal {
	case JournalDelete, JournalTruncate, JournalPersist, JournalWAL:
	default:
		return fmt.Errorf("drivers/wasm: journal mode %q is not supported (want delete, truncate, persist or wal)", d.journal)
	}
	if d.exclusive && d.journal != JournalWAL {
		// A rollback-journal commit is captured when SQLite releases its
		// lock at the end of the transaction, which it never does here.
		return fmt.Errorf("drivers/wasm: WithExclusiveLocking needs WithJournalMode(JournalWAL), not %q", d.journal)
	}
	for _, p := range d.pragmas {
		if strings.ContainsAny(p, ";") || strings.TrimSpace(p) == "" {
			return fmt.Errorf("drivers/wasm: pragma %q must be a single non-empty setting", p)
		}
	}
	return nil
}
