package cell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
)

// database is a cell's connection to its SQLite database and the log its
// commits go to, with everything that depends on the connection: the
// turn's open rows and savepoints, the change counters and the commit
// sequence. It exists so that the ways a connection comes and goes live
// in one place: opened on a private in-memory database while the cell
// stores nothing (virgin, see lazy.go), moved to the file at the first
// write (materialize), given up while the object is idle (release) and
// opened again by the next turn that uses storage (reopen).
//
// The instance's mu guards every field; no method takes a lock. The
// settings above conn are fixed before the first open.
type database struct {
	drv       driver.Driver
	pages     *driver.PagePool
	logs      durability.Log    // opens the cell's log
	authorize driver.Authorizer // installed on every connection
	logger    *slog.Logger
	key       string // the cell key
	path      string // the database file
	localLog  bool   // logs is durability.Local: commits need no hand-over
	// restart, for a single-host cell on a log that acknowledges from the
	// bucket, is the activation's restart mark (unsynced.go); nil for
	// every other cell.
	restart *restartMark

	conn     driver.Conn // nil: released while idle
	capturer driver.PageCapturer
	log      durability.CellLog // nil while virgin
	// provesOwnership mirrors durability.ProvesOwnership(log) for the
	// tracker, which reads it without the instance's mu.
	provesOwnership atomic.Bool
	// virgin: on the in-memory database, nothing stored yet; spare is the
	// in-memory database a materialized cell left, closed when the turn
	// ends (rows the turn still reads come from it).
	virgin bool
	spare  []driver.Conn

	seq     uint64     // the last commit handed to the log
	mark    changeMark // change counters after the last commit (no page capture)
	rows    map[*Rows]struct{}
	spDepth int // savepoints open (SQL.Transaction)
	// limited is the connection that has the database size limit
	// (limits.go): a new one needs it set.
	limited driver.Conn
}

// holdsState reports whether the cell may hold anything: a local database
// file, or a log that holds something for it (a log that cannot tell is
// assumed to).
func (db *database) holdsState(ctx context.Context) (bool, error) {
	if _, err := os.Lstat(db.path); err == nil {
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("look for the local database: %w", err)
	}
	if db.localLog {
		return false, nil
	}
	p, ok := db.logs.(durability.Prober)
	if !ok {
		return true, nil
	}
	held, err := p.Holds(ctx, db.key)
	if err != nil {
		return false, fmt.Errorf("look for the cell in the log: %w", err)
	}
	return held, nil
}

// openMemory opens a private, empty in-memory database with the cell's
// authorizer: where a never-written cell runs, at activation and again
// after its idle connection was released.
func (db *database) openMemory(ctx context.Context) (driver.Conn, error) {
	conn, err := db.drv.Open(ctx, driver.Config{})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := conn.SetAuthorizer(db.authorize); err != nil {
		conn.Close()
		return nil, fmt.Errorf("install authorizer: %w", err)
	}
	return conn, nil
}

// openEmpty puts a cell that holds nothing on an empty in-memory
// database.
func (db *database) openEmpty(ctx context.Context) error {
	conn, err := db.openMemory(ctx)
	if err != nil {
		return err
	}
	db.conn, db.virgin = conn, true
	return nil
}

// openConn opens the cell's database file through the driver, capturing
// pages when the driver can and the log wants commits.
func (db *database) openConn(ctx context.Context) (driver.Conn, driver.PageCapturer, error) {
	capture := db.drv.Capabilities().PageCapture && !db.localLog
	conn, err := db.drv.Open(ctx, driver.Config{Path: db.path, PageCapture: capture, Pages: db.pages})
	if err != nil {
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	var capturer driver.PageCapturer
	if capture {
		if pc, ok := conn.(driver.PageCapturer); ok {
			capturer = pc
		}
	}
	return conn, capturer, nil
}

// openFile opens the cell's database file and its log under grant.
// restore asks the log to restore an empty database (see
// durability.OpenRequest.Restore). The caller holds the instance's mu, or
// the activation's gate before any turn.
func (db *database) openFile(ctx context.Context, grant lease.Grant, restore bool) error {
	conn, capturer, err := db.openConn(ctx)
	if err != nil {
		return err
	}
	if restore {
		empty, err := databaseIsEmpty(ctx, conn)
		if err != nil {
			conn.Close()
			return fmt.Errorf("database size: %w", err)
		}
		restore = grant.BucketWins() || empty
	}
	req := durability.OpenRequest{
		Cell:          db.key,
		Epoch:         grant.Epoch(),
		Conn:          conn,
		Restore:       restore,
		PagesCaptured: capturer != nil,
	}
	switch {
	case grant.BucketWins() || db.localLog:
	case db.restart != nil && db.restart.boot != "":
		// Single host on a log that acknowledges from the bucket: the
		// file is not synced per commit; the log records the restart
		// mark beside its first group's upload, unless the mark already
		// names this boot (docs/durability.md).
		if !db.restart.isCurrent() {
			req.SyncLocal = db.restart.record
		}
	default:
		// Local primary: the log syncs the local file once per group
		// commit, beside the group's upload (docs/durability.md).
		path := db.path
		req.SyncLocal = func() error { return durability.SyncDatabaseFiles(path) }
	}
	cl, err := db.logs.Open(ctx, req)
	if err != nil {
		conn.Close()
		return fmt.Errorf("open log: %w", err)
	}
	if err := conn.SetAuthorizer(db.authorize); err != nil {
		cl.Close(ctx, false)
		conn.Close()
		return fmt.Errorf("install authorizer: %w", err)
	}
	db.conn, db.capturer, db.log = conn, capturer, cl
	db.provesOwnership.Store(durability.ProvesOwnership(cl))
	return nil
}

// readMark reads the change counters of a new connection, which a commit
// without captured pages is told apart by (SQLite counts changes per
// connection, so they start afresh with each one).
func (db *database) readMark(ctx context.Context) (err error) {
	if db.capturer != nil || db.localLog {
		return nil
	}
	db.mark, err = readChangeMark(ctx, db.conn)
	return err
}

// materialize creates the file of a cell on the in-memory database, at
// its first write: it opens the file and the log under grant, runs
// firstWrite (which records the epoch and writes celld's tables into the
// turn's new transaction) and opens the savepoints the turn holds. On
// failure the file is discarded and the cell stays on the in-memory
// database. The caller holds the instance's mu inside a turn.
func (db *database) materialize(ctx context.Context, grant lease.Grant, firstWrite func(context.Context) error) error {
	if !db.virgin {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	mem := db.conn
	if err := os.MkdirAll(filepath.Dir(db.path), 0o755); err != nil {
		return err
	}
	// The lease is held and the log held nothing at open: nothing to
	// restore, and the log's first commit is the epoch's snapshot.
	if err := db.openFile(ctx, grant, false); err != nil {
		return err
	}
	fail := func(err error) error {
		db.log.Close(ctx, false)
		db.conn.Close()
		db.conn, db.log, db.capturer = mem, nil, nil
		db.provesOwnership.Store(false)
		discardDatabase(db.path)
		return err
	}
	if err := db.readMark(ctx); err != nil {
		return fail(err)
	}
	if err := firstWrite(ctx); err != nil {
		return fail(err)
	}
	for i := 1; i <= db.spDepth; i++ {
		if _, err := db.conn.Exec(ctx, fmt.Sprintf("%sSAVEPOINT cellb_sp%d", rtSQL, i)); err != nil {
			db.conn.Rollback(ctx)
			return fail(fmt.Errorf("cell: open savepoint: %w", err))
		}
	}
	db.virgin = false
	db.spare = append(db.spare, mem)
	return nil
}

// closeSpare closes the in-memory database a materialized cell left.
func (db *database) closeSpare(ctx context.Context) {
	for _, c := range db.spare {
		if c.InTransaction() {
			c.Rollback(ctx)
		}
		c.Close()
	}
	db.spare = nil
}

// closeRows closes the rows the turn left open; using them later reports
// ErrRowsClosed.
func (db *database) closeRows() {
	for r := range db.rows {
		r.closeLocked()
		if r.err == nil {
			r.err = ErrRowsClosed
		}
	}
}

// release closes the connection of an idle object if nothing depends on
// it (an open transaction or savepoint, rows, a log that holds
// per-connection state and cannot move it), and reports whether it did.
// An error is the close's: the connection is gone either way.
func (db *database) release(ctx context.Context) (bool, error) {
	if db.conn == nil || db.conn.InTransaction() || db.spDepth > 0 || len(db.rows) > 0 {
		return false, nil
	}
	var rb durability.Rebinder
	if !db.virgin && !db.localLog {
		var ok bool
		if rb, ok = db.log.(durability.Rebinder); !ok {
			return false, nil
		}
	}
	if rb != nil {
		if err := rb.Rebind(ctx, nil); err != nil {
			db.logger.Warn("cell: the log kept the idle connection", "cell", db.key, "err", err)
			return false, nil
		}
	}
	db.closeSpare(ctx)
	err := db.conn.Close()
	db.conn, db.capturer = nil, nil
	return true, err
}

// reopen opens the connection release gave up: a new empty in-memory
// database for a cell that stores nothing yet, else the file through the
// driver's ordinary open (no restore: the file is current), rebinding the
// log to it.
func (db *database) reopen(ctx context.Context) error {
	if db.virgin {
		conn, err := db.openMemory(ctx)
		if err != nil {
			return err
		}
		db.conn = conn
		return nil
	}
	conn, capturer, err := db.openConn(ctx)
	if err != nil {
		return err
	}
	if err := conn.SetAuthorizer(db.authorize); err != nil {
		conn.Close()
		return fmt.Errorf("install authorizer: %w", err)
	}
	if rb, ok := db.log.(durability.Rebinder); ok && !db.localLog {
		if err := rb.Rebind(ctx, conn); err != nil {
			conn.Close()
			return fmt.Errorf("rebind the log: %w", err)
		}
	}
	db.conn, db.capturer = conn, capturer
	return db.readMark(ctx)
}

// close releases the connection and the log for good: the open
// transaction is rolled back, and the log flushes (final: an orderly
// close or eviction) or is dropped (a reset, modelling a crash).
func (db *database) close(ctx context.Context, final bool) []error {
	db.closeRows()
	db.closeSpare(ctx)
	var errs []error
	if db.conn != nil && db.conn.InTransaction() {
		if err := db.conn.Rollback(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if db.log != nil {
		if err := db.log.Close(ctx, final); err != nil {
			errs = append(errs, fmt.Errorf("close log: %w", err))
		}
	}
	if db.conn != nil {
		if err := db.conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close database: %w", err))
		}
	}
	if final && db.restart != nil {
		// A clean close: the file is synced and its restart mark goes.
		// Failing that, the mark stays, which costs at most a restore.
		if err := db.restart.clear(); err != nil {
			db.logger.Warn("cell: could not sync the local database at close; its restart mark stays", "cell", db.key, "err", err)
		}
	}
	return errs
}

// discardDatabase removes a cell's database file and the journal files
// SQLite keeps beside it, so the next open starts an empty database.
func discardDatabase(path string) error {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("discard the local database: %w", err)
		}
	}
	return nil
}

func isLocalLog(l durability.Log) bool {
	switch l.(type) {
	case durability.Local, *durability.Local:
		return true
	}
	return false
}

// databaseIsEmpty reports whether a database holds nothing yet: no pages, or
// (a driver that set WAL mode on a new file has already written page 1) no
// schema object at all. Only such a database is restored when the local file
// is the primary copy.
func databaseIsEmpty(ctx context.Context, conn driver.Conn) (bool, error) {
	pages, err := conn.PageCount(ctx)
	if err != nil || pages == 0 {
		return pages == 0, err
	}
	rows, err := conn.Query(ctx, "SELECT count(*) FROM sqlite_schema")
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var n int64 = -1
	for rows.Next() {
		if err := driver.ScanValues(rows.Values(), &n); err != nil {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	return n == 0, nil
}
