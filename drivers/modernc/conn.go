package modernc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cellb/cellb/core/driver"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Conn is one open database. Like every driver.Conn it is used by one
// goroutine at a time; only a context's cancellation reaches it from
// another goroutine.
type Conn struct {
	opts   Options
	path   string // "" for an in-memory database
	tls    *libc.TLS
	handle uintptr // this Conn's key in connHandles
	zMain  uintptr // C string "main"

	// db is the sqlite3* handle, 0 once closed. It changes only with
	// intrMu held, because a context's cancellation reads it from another
	// goroutine to interrupt SQLite.
	db     uintptr
	intrMu sync.Mutex

	cache    stmtCache
	rows     map[*rows]struct{}
	sessions map[*session]struct{}
	auth     driver.Authorizer
	wal      *walCapture // nil without page capture

	// read is the rows the Exec in progress read (statement counters,
	// counters.go).
	read int64

	// internal is set while the driver runs SQL of its own, which the
	// authorizer lets through (see execInternal).
	internal bool
	// stepping is set while a caller's statement runs (sqlite3_step).
	stepping bool
	// refused says why the driver itself denied the statement being
	// prepared; the error then says so instead of just "not authorized".
	refused string
	// panicked holds a panic recovered inside a Go callback SQLite called
	// (the authorizer); it is raised again once control is back in Go, so
	// a panic never unwinds through SQLite's own frames.
	panicked any
	// conflict is what the changeset conflict handler saw last.
	conflict *ConflictError
}

var (
	_ driver.Conn         = (*Conn)(nil)
	_ driver.Sessioner    = (*Conn)(nil)
	_ driver.Checkpointer = (*Conn)(nil)
)

func openConn(opts Options, cfg driver.Config) (c *Conn, err error) {
	c = &Conn{
		opts:     opts,
		path:     cfg.Path,
		tls:      libc.NewTLS(),
		cache:    newStmtCache(opts.StatementCache),
		rows:     make(map[*rows]struct{}),
		sessions: make(map[*session]struct{}),
	}
	if cfg.PageCapture {
		c.wal = newWALCapture(cfg.Path+"-wal", cfg.Pages)
	}
	if c.zMain, err = cStringAlloc(c.tls, "main"); err != nil {
		c.tls.Close()
		return nil, err
	}
	c.handle = registerConn(c)
	if err := c.openDB(); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// openDB opens the file (again, after Restore) and applies every setting
// the connection carries: pragmas, the WAL hook, the authorizer.
func (c *Conn) openDB() error {
	name := c.path
	if name == "" {
		name = ":memory:"
	}
	db, err := c.openHandle(name)
	if err != nil {
		return err
	}
	c.setDB(db)
	if err := c.configure(); err != nil {
		c.closeDB()
		return fmt.Errorf("modernc: open %q: %w", name, err)
	}
	return nil
}

// openHandle opens a sqlite3 handle on name with extended result codes.
func (c *Conn) openHandle(name string) (uintptr, error) {
	zName, err := cStringAlloc(c.tls, name)
	if err != nil {
		return 0, err
	}
	defer cFree(c.tls, zName)
	pDB := c.tls.Alloc(8)
	defer c.tls.Free(8)
	// NOMUTEX: one goroutine uses a Conn at a time, so SQLite's own mutex
	// would only cost time (sqlite3_interrupt, the one call made from
	// elsewhere, needs none). No URI flag: the path is taken literally.
	flags := int32(sqlite3.SQLITE_OPEN_READWRITE | sqlite3.SQLITE_OPEN_CREATE |
		sqlite3.SQLITE_OPEN_NOMUTEX | sqlite3.SQLITE_OPEN_EXRESCODE)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, zName, pDB, flags, 0)
	db := cReadPtr(pDB)
	if rc != sqlite3.SQLITE_OK {
		err := sqliteError(c.tls, db, rc)
		if db != 0 {
			sqlite3.Xsqlite3_close_v2(c.tls, db)
		}
		return 0, fmt.Errorf("modernc: open %q: %w", name, err)
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, db, 1)
	return db, nil
}

func (c *Conn) configure() error {
	if c.path != "" {
		if err := c.pragmaExpect("PRAGMA locking_mode=EXCLUSIVE", "exclusive"); err != nil {
			return err
		}
		if err := c.pragmaExpect("PRAGMA journal_mode=WAL", "wal"); err != nil {
			return err
		}
		if err := c.execInternal(context.Background(), "PRAGMA synchronous="+c.opts.Synchronous); err != nil {
			return err
		}
	}
	if c.wal != nil {
		if err := c.wal.start(c); err != nil {
			return err
		}
	}
	return c.installAuthorizer()
}

// pragmaExpect runs a pragma that answers with one text value and checks
// the answer, because SQLite reports a refused journal or locking mode by
// answering with the old one rather than with an error.
func (c *Conn) pragmaExpect(sql, want string) error {
	got, err := c.queryText(sql)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("modernc: %s answered %q, want %q", sql, got, want)
	}
	return nil
}

func (c *Conn) setDB(db uintptr) {
	c.intrMu.Lock()
	c.db = db
	c.intrMu.Unlock()
}

// closeDB finalizes every statement, deletes every session and closes the
// sqlite3 handle. Rows and Sessions still held by callers fail from now on.
func (c *Conn) closeDB() error {
	if c.db == 0 {
		return nil
	}
	for r := range c.rows {
		r.abandon()
	}
	for s := range c.sessions {
		s.abandon()
	}
	for _, st := range c.cache.drain() {
		sqlite3.Xsqlite3_finalize(c.tls, st)
	}
	db := c.db
	c.setDB(0)
	if rc := sqlite3.Xsqlite3_close_v2(c.tls, db); rc != sqlite3.SQLITE_OK {
		return sqliteError(c.tls, 0, rc)
	}
	return nil
}

// release frees what openConn allocated besides the database itself.
func (c *Conn) release() {
	unregisterConn(c.handle)
	cFree(c.tls, c.zMain)
	c.zMain = 0
	c.tls.Close()
	c.tls = nil
}

// Close closes the database. Pending captured commits are discarded; open
// Rows and Sessions stop working.
func (c *Conn) Close() error {
	if c.tls == nil {
		return nil
	}
	err := c.closeDB()
	if c.wal != nil {
		c.wal.reset()
	}
	c.release()
	return err
}

// ready fails on a closed connection or a context that is already done.
func (c *Conn) ready(ctx context.Context) error {
	if c.db == 0 {
		return ErrClosed
	}
	return ctx.Err()
}

// rethrow raises a panic a Go callback recovered while SQLite was running.
func (c *Conn) rethrow() {
	if p := c.panicked; p != nil {
		c.panicked = nil
		panic(p)
	}
}

// InTransaction reports whether a transaction is open.
func (c *Conn) InTransaction() bool {
	return c.db != 0 && sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) == 0
}

// Begin opens a transaction with BEGIN IMMEDIATE.
func (c *Conn) Begin(ctx context.Context) error {
	return c.execInternal(ctx, "BEGIN IMMEDIATE")
}

// Commit commits the open transaction.
func (c *Conn) Commit(ctx context.Context) error {
	return c.execInternal(ctx, "COMMIT")
}

// Rollback abandons the open transaction; without one it does nothing.
// It runs even when ctx is already done: a rollback is how a caller
// cleans up after a cancelled call, and leaving the transaction open would
// keep the write lock.
func (c *Conn) Rollback(ctx context.Context) error {
	if c.db == 0 {
		return ErrClosed
	}
	if !c.InTransaction() {
		return nil
	}
	return c.execInternal(context.WithoutCancel(ctx), "ROLLBACK")
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

func (c *Conn) queryInt(ctx context.Context, sql string) (int64, error) {
	r, err := c.query(ctx, stmtKey{sql: sql, internal: true}, nil)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("modernc: %s returned no row", sql)
	}
	n, ok := r.Values()[0].(int64)
	if !ok {
		return 0, fmt.Errorf("modernc: %s returned %T, not an integer", sql, r.Values()[0])
	}
	return n, r.Close()
}

// queryText runs a statement of the driver's own and returns the first
// column of its first row as text.
func (c *Conn) queryText(sql string) (string, error) {
	r, err := c.query(context.Background(), stmtKey{sql: sql, internal: true}, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if !r.Next() {
		return "", errors.Join(fmt.Errorf("modernc: %s returned no row", sql), r.Err())
	}
	s, _ := r.Values()[0].(string)
	return s, r.Close()
}
