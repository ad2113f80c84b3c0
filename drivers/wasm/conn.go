package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
)

// busyTimeout bounds how long a statement waits for a lock held by another
// process (a reader such as `cellb inspect`); the cell itself is the only
// writer.
const busyTimeout = 5 * time.Second

// Conn is one open database. Like every driver.Conn it is used by one
// goroutine at a time.
type Conn struct {
	drv     *Driver
	path    string // absolute file path; empty for an in-memory database
	mem     bool
	capture bool

	db    *sqlite3.Conn
	file  *captureFile // the main database file, under SQLite
	rec   *recorder    // nil without capture
	auth  authState
	rows  map[*Rows]struct{}
	cache stmtCache
	ctl   map[string]*sqlite3.Stmt // prepared transaction control
	read  int64                    // rows the Exec in progress read (statement counters)
	// broken is set when a Restore failed after closing the old database
	// and could not reopen: the connection is unusable.
	broken error
}

var (
	_ driver.Conn         = (*Conn)(nil)
	_ driver.PageCapturer = (*Conn)(nil)
	_ driver.Checkpointer = (*Conn)(nil)
)

func absPath(p string) (string, error) {
	return filepath.Abs(p)
}

// uri is the URI SQLite opens: the file path (or a memdb name) and the
// driver's VFS.
func (c *Conn) uri(memName string) string {
	u := url.URL{Scheme: "file", OmitHost: true}
	q := url.Values{}
	if c.mem {
		u.Path = "/" + memName
		q.Set("vfs", memVFSName)
	} else {
		u.Path = filepath.ToSlash(c.path)
		q.Set("vfs", osVFSName)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// open opens the database and makes it the connection's.
func (c *Conn) open(ctx context.Context) error {
	db, f, err := c.openDB(ctx, nil)
	if err != nil {
		return err
	}
	c.install(db, f)
	return nil
}

// openDB opens the database with the connection's settings, without
// making it the connection's yet. For an in-memory database, memImage
// (nil for an empty one) is its content.
func (c *Conn) openDB(ctx context.Context, memImage []byte) (*sqlite3.Conn, *captureFile, error) {
	var memName string
	if c.mem {
		// memdb databases are shared by name; a random name used once and
		// dropped from memdb's table right after the open keeps this one
		// private to the connection.
		memName = "cellb-" + rand.Text()
		memdb.Create(memName, memImage)
		defer memdb.Delete(memName)
	}
	db, err := sqlite3.OpenContext(ctx, c.uri(memName))
	if err != nil {
		return nil, nil, fmt.Errorf("drivers/wasm: open %s: %w", c.describe(), sqliteError(ctx, err))
	}
	f, err := c.setup(ctx, db)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("drivers/wasm: open %s: %w", c.describe(), err)
	}
	return db, f, nil
}

// walMode reports whether the database runs in WAL mode (a file database
// of a driver configured with JournalWAL; memdb has no log).
func (c *Conn) walMode() bool { return !c.mem && c.drv.journal == JournalWAL }

func (c *Conn) describe() string {
	if c.mem {
		return "in-memory database"
	}
	return c.path
}

// setup applies the driver's settings to a freshly opened database.
func (c *Conn) setup(ctx context.Context, db *sqlite3.Conn) (*captureFile, error) {
	if err := db.BusyTimeout(busyTimeout); err != nil {
		return nil, sqliteError(ctx, err)
	}
	if err := db.SetAuthorizer(c.auth.authorize); err != nil {
		return nil, sqliteError(ctx, err)
	}
	if ctx.Done() != nil {
		old := db.SetInterrupt(ctx)
		defer db.SetInterrupt(old)
	}
	defer func() { c.auth.mode = authUser }()

	c.auth.mode = authInternal
	f, err := mainFile(db)
	if err != nil {
		return nil, err
	}
	if c.exclusive() {
		// Keep the log file when the connection closes (emptied, see
		// closeDB): creating it again at every open costs more than the
		// rest of the open.
		f.SetPersistWAL(true)
		// Before anything reads the file: the mode in force when SQLite
		// first opens the log decides where the log's index lives.
		mode, err := queryText(ctx, db, "PRAGMA locking_mode=EXCLUSIVE")
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(mode, "exclusive") {
			return nil, fmt.Errorf("locking_mode is %q after asking for exclusive", mode)
		}
	}
	// memdb keeps its journal in memory (it has no journal files), so only
	// a file gets the configured mode. Setting it also converts a WAL-mode
	// file, checkpointing its log first.
	if !c.mem {
		mode, err := queryText(ctx, db, "PRAGMA journal_mode="+string(c.drv.journal))
		if err != nil {
			return nil, inUse(c, err)
		}
		if !strings.EqualFold(mode, string(c.drv.journal)) {
			return nil, fmt.Errorf("journal_mode is %q after asking for %q", mode, c.drv.journal)
		}
	}
	// The configured pragmas pass the same guard as user SQL.
	c.auth.mode = authSetup
	for _, p := range c.drv.pragmas {
		if err := db.Exec("PRAGMA " + p); err != nil {
			return nil, fmt.Errorf("pragma %q: %w", p, c.userError(ctx, err))
		}
	}
	c.auth.mode = authInternal
	// Reading the schema checks that the file is a database (and rolls
	// back a hot journal left by a crash, before capture starts).
	if _, err := queryText(ctx, db, "SELECT count(*) FROM sqlite_schema"); err != nil {
		return nil, inUse(c, err)
	}
	return f, nil
}

// exclusive reports whether the database holds its file lock while open
// (WithExclusiveLocking; memdb has no file).
func (c *Conn) exclusive() bool { return !c.mem && c.drv.exclusive }

// install makes db (set up by openDB) the connection's database and
// starts capture afresh on it.
func (c *Conn) install(db *sqlite3.Conn, f *captureFile) {
	c.db, c.file = db, f
	if c.rec != nil {
		c.rec.reset()
		f.rec = c.rec
	}
}

// bind makes ctx interrupt what runs on the connection until the returned
// func is called.
func (c *Conn) bind(ctx context.Context) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	old := c.db.SetInterrupt(ctx)
	return func() { c.db.SetInterrupt(old) }
}

func (c *Conn) usable() error {
	if c.broken != nil {
		return c.broken
	}
	if c.db == nil {
		return ErrClosed
	}
	return nil
}

// queryText runs driver SQL that returns one value and returns it as text.
func queryText(ctx context.Context, db *sqlite3.Conn, sql string) (string, error) {
	s, _, err := db.Prepare(sql)
	if err != nil {
		return "", sqliteError(ctx, err)
	}
	defer s.Close()
	if !s.Step() {
		if err := s.Err(); err != nil {
			return "", sqliteError(ctx, err)
		}
		return "", fmt.Errorf("drivers/wasm: %s returned no row", sql)
	}
	return s.ColumnText(0), nil
}

// queryInt runs a driver PRAGMA that returns one integer.
func (c *Conn) queryInt(ctx context.Context, sql string) (int64, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	defer c.bind(ctx)()
	c.auth.mode = authInternal
	defer func() { c.auth.mode = authUser }()
	s, _, err := c.db.Prepare(sql)
	if err != nil {
		return 0, sqliteError(ctx, err)
	}
	defer s.Close()
	if !s.Step() {
		if err := s.Err(); err != nil {
			return 0, sqliteError(ctx, err)
		}
		return 0, fmt.Errorf("drivers/wasm: %s returned no row", sql)
	}
	return s.ColumnInt64(0), nil
}

// Exec runs one or more statements; args bind to the first statement that
// has parameters.
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	if err := c.usable(); err != nil {
		return driver.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return driver.Result{}, err
	}
	defer c.bind(ctx)()
	before := c.db.TotalChanges()
	c.read = 0
	// A cached statement is a single statement: binding checks the
	// arguments before anything runs.
	if cs := c.cache.get(sql); cs != nil {
		if err := c.execStmt(ctx, cs.stmt, args); err != nil {
			return driver.Result{}, err
		}
		return c.result(before), nil
	}
	// Several statements may run before the one taking the arguments:
	// refuse bad arguments first.
	if err := checkArgs(args); err != nil {
		return driver.Result{}, err
	}
	bound := false
	for n := 1; ; n++ {
		s, tail, err := c.db.Prepare(sql)
		if err != nil {
			return driver.Result{}, c.userError(ctx, err)
		}
		if s == nil { // only blanks or comments left
			break
		}
		var stmtArgs []any
		if params := s.BindCount(); params > 0 {
			if bound {
				s.Close()
				return driver.Result{}, fmt.Errorf("%w: statement %d has %d parameters, but the arguments were already bound to an earlier statement", ErrArguments, n, params)
			}
			stmtArgs, bound = args, true
		}
		last := cacheable(tail)
		if n == 1 && last && c.cache.put(sql, s) != nil {
			err = c.execStmt(ctx, s, stmtArgs)
		} else {
			err = c.execStmt(ctx, s, stmtArgs)
			s.Close()
		}
		if err != nil {
			return driver.Result{}, err
		}
		if last {
			break
		}
		sql = tail
	}
	if !bound && len(args) > 0 {
		return driver.Result{}, fmt.Errorf("%w: %d arguments given, but no statement has parameters", ErrArguments, len(args))
	}
	return c.result(before), nil
}

// execStmt binds args (all of the statement's parameters) and runs s to
// completion; s is left reset.
func (c *Conn) execStmt(ctx context.Context, s *sqlite3.Stmt, args []any) error {
	if err := bindArgs(s, args); err != nil {
		return err
	}
	s.Status(sqlite3.STMTSTATUS_FULLSCAN_STEP, true) // a cached statement counts afresh
	err := s.Exec()
	c.read += scanned(s)
	if err != nil {
		return c.userError(ctx, err)
	}
	return nil
}

// result reports what the Exec that started at totalChanges before did:
// SQLite's row count of the last change, only if the Exec changed rows.
func (c *Conn) result(before int64) driver.Result {
	res := driver.Result{Counted: true, RowsRead: c.read, RowsWritten: c.db.TotalChanges() - before}
	if c.db.TotalChanges() != before {
		res.RowsAffected = c.db.Changes()
	}
	res.LastInsertID = c.db.LastInsertRowID()
	return res
}

// checkArgs refuses, before anything runs, arguments of a type the
// driver cannot bind.
func checkArgs(args []any) error {
	for i, a := range args {
		if _, err := driver.NormalizeArg(a); err != nil {
			return fmt.Errorf("%w: argument %d: %w", ErrArguments, i+1, err)
		}
	}
	return nil
}

func bindArgs(s *sqlite3.Stmt, args []any) error {
	if n := s.BindCount(); n != len(args) {
		return fmt.Errorf("%w: the statement has %d parameters, %d arguments given", ErrArguments, n, len(args))
	}
	for i, a := range args {
		// The common types bind directly; the rest go through
		// driver.NormalizeArg, which defines what every driver accepts.
		var err error
		switch v := a.(type) {
		case int:
			err = s.BindInt64(i+1, int64(v))
		case int64:
			err = s.BindInt64(i+1, v)
		case string:
			err = s.BindText(i+1, v)
		case []byte:
			err = s.BindBlob(i+1, v)
		case float64:
			err = s.BindFloat(i+1, v)
		case nil:
			err = s.BindNull(i + 1)
		default:
			err = bindNormalized(s, i+1, a)
		}
		if errors.Is(err, ErrArguments) {
			return err
		}
		if err != nil {
			return fmt.Errorf("binding argument %d: %w", i+1, sqliteError(context.Background(), err))
		}
	}
	return nil
}

func bindNormalized(s *sqlite3.Stmt, param int, a any) error {
	v, err := driver.NormalizeArg(a)
	if err != nil {
		return fmt.Errorf("%w: argument %d: %w", ErrArguments, param, err)
	}
	switch v := v.(type) {
	case nil:
		err = s.BindNull(param)
	case int64:
		err = s.BindInt64(param, v)
	case float64:
		err = s.BindFloat(param, v)
	case string:
		err = s.BindText(param, v)
	case []byte:
		err = s.BindBlob(param, v)
	}
	return err
}

// Query runs one statement and returns its rows.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer c.bind(ctx)()
	var s *sqlite3.Stmt
	cs := c.cache.get(sql)
	if cs != nil {
		s = cs.stmt
	} else {
		var tail string
		var err error
		s, tail, err = c.db.Prepare(sql)
		if err != nil {
			return nil, c.userError(ctx, err)
		}
		if s == nil {
			return nil, fmt.Errorf("drivers/wasm: Query: no statement in %q", clip(sql))
		}
		if !cacheable(tail) {
			// The tail may hold only comments; preparing it tells.
			if t, _, err := c.db.Prepare(tail); err != nil || t != nil {
				t.Close()
				s.Close()
				return nil, fmt.Errorf("drivers/wasm: Query runs one statement; %q follows the first", clip(tail))
			}
		} else {
			cs = c.cache.put(sql, s)
		}
	}
	if err := bindArgs(s, args); err != nil {
		if cs == nil {
			s.Close()
		}
		return nil, err
	}
	r := newRows(c, s, cs, ctx)
	if c.rows == nil {
		c.rows = map[*Rows]struct{}{}
	}
	c.rows[r] = struct{}{}
	return r, nil
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Begin opens a transaction with BEGIN IMMEDIATE.
func (c *Conn) Begin(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if !c.db.GetAutocommit() {
		return ErrInTransaction
	}
	return c.control(ctx, "BEGIN IMMEDIATE")
}

// Commit commits the open transaction.
func (c *Conn) Commit(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.db.GetAutocommit() {
		return ErrNoTransaction
	}
	return c.control(ctx, "COMMIT")
}

// Rollback abandons the open transaction, if any.
func (c *Conn) Rollback(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.db.GetAutocommit() {
		return nil
	}
	// A rollback must not be interrupted: ctx only bounds waiting.
	return c.control(context.WithoutCancel(ctx), "ROLLBACK")
}

// control runs transaction control statements, which the user's
// authorizer (that may well forbid BEGIN and COMMIT in user SQL) does not
// see.
func (c *Conn) control(ctx context.Context, sql string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.bind(ctx)()
	c.auth.mode = authInternal
	defer func() { c.auth.mode = authUser }()
	s := c.ctl[sql]
	if s == nil {
		var err error
		if s, _, err = c.db.Prepare(sql); err != nil {
			return sqliteError(ctx, err)
		}
		if c.ctl == nil {
			c.ctl = map[string]*sqlite3.Stmt{}
		}
		c.ctl[sql] = s
	}
	return sqliteError(ctx, s.Exec())
}

// InTransaction reports whether a transaction is open.
func (c *Conn) InTransaction() bool {
	return c.db != nil && !c.db.GetAutocommit()
}

// PageSize is the database page size in bytes.
func (c *Conn) PageSize(ctx context.Context) (int, error) {
	n, err := c.queryInt(ctx, "PRAGMA page_size")
	return int(n), err
}

// PageCount is the database size in pages.
func (c *Conn) PageCount(ctx context.Context) (int64, error) {
	return c.queryInt(ctx, "PRAGMA page_count")
}

// TakeCommits returns the commits made since the previous call. It fails
// with ErrCaptureLost once capture can no longer be trusted, and with
// driver.ErrUnsupported on a connection opened without PageCapture.
func (c *Conn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if c.rec == nil {
		return nil, fmt.Errorf("drivers/wasm: the connection was opened without PageCapture: %w", driver.ErrUnsupported)
	}
	return c.rec.take()
}

// Close closes the database, its open Rows included. Pending captured
// commits are discarded.
func (c *Conn) Close() error {
	c.broken = nil // a connection broken by Restore is now just closed
	if c.db == nil {
		return nil
	}
	err := c.closeDB(c.exclusive())
	if c.rec != nil {
		c.rec.reset()
	}
	return err
}

// closeDB finalizes every statement and closes the SQLite connection.
// With emptyLog (WithExclusiveLocking, whose log file stays between
// opens) it first checkpoints and truncates the log, so the next open
// finds an empty one; if that cannot complete, the log is left for the
// next open to replay, as after a crash.
func (c *Conn) closeDB(emptyLog bool) error {
	for r := range c.rows {
		r.Close()
	}
	var stmts []*sqlite3.Stmt
	for s := range c.db.Stmts() {
		stmts = append(stmts, s)
	}
	for _, s := range stmts {
		s.Close()
	}
	c.cache = stmtCache{}
	c.ctl = nil
	if emptyLog && c.db.GetAutocommit() {
		_ = c.checkpoint(context.Background(), "TRUNCATE")
	}
	err := c.db.Close()
	c.db = nil
	c.file = nil
	if err != nil {
		return fmt.Errorf("drivers/wasm: close %s: %w", c.describe(), sqliteError(context.Background(), err))
	}
	return nil
}

// Checkpoint copies the write-ahead log into the database file (WAL mode
// only; a rollback-journal connection returns driver.ErrUnsupported).
// Capture does not depend on checkpoints: commits are taken from the log as
// they are written.
func (c *Conn) Checkpoint(ctx context.Context, mode driver.CheckpointMode) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.drv.journal != JournalWAL {
		return fmt.Errorf("drivers/wasm: Checkpoint in rollback-journal mode: %w", driver.ErrUnsupported)
	}
	name, ok := map[driver.CheckpointMode]string{
		driver.CheckpointPassive:  "PASSIVE",
		driver.CheckpointFull:     "FULL",
		driver.CheckpointRestart:  "RESTART",
		driver.CheckpointTruncate: "TRUNCATE",
	}[mode]
	if !ok {
		return fmt.Errorf("drivers/wasm: unknown checkpoint mode %d", mode)
	}
	return c.checkpoint(ctx, name)
}

// checkpoint runs PRAGMA wal_checkpoint(mode) and fails if the checkpoint
// could not complete.
func (c *Conn) checkpoint(ctx context.Context, mode string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.bind(ctx)()
	c.auth.mode = authInternal
	defer func() { c.auth.mode = authUser }()
	s, _, err := c.db.Prepare("PRAGMA wal_checkpoint(" + mode + ")")
	if err != nil {
		return sqliteError(ctx, err)
	}
	defer s.Close()
	if !s.Step() {
		return sqliteError(ctx, s.Err())
	}
	if busy := s.ColumnInt(0); busy != 0 && mode != "PASSIVE" {
		return fmt.Errorf("drivers/wasm: checkpoint %s could not complete (another connection holds the database)", mode)
	}
	return nil
}
