//go:build cgo

package cgo

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime/cgo"

	"github.com/mattn/go-sqlite3"

	"github.com/cellb/cellb/core/driver"
)

// ErrClosed is returned by every method of a closed connection, and of one
// whose Restore could not reopen the database.
var ErrClosed = errors.New("cgo: connection is closed")

// ErrInTransaction is returned by operations that need the connection in
// autocommit mode (Serialize, Restore).
var ErrInTransaction = errors.New("cgo: not allowed inside a transaction")

// conn is one open database. Its methods are called by one goroutine at a
// time (the cell's input gate), so it has no locks of its own.
type conn struct {
	s  settings
	sc *sqlite3.SQLiteConn // nil once closed
	// auth is the user's authorizer; nil for none.
	auth driver.Authorizer
	// internal is set while the driver runs its own statements, which the
	// user's authorizer must not see (a cell denies every PRAGMA, yet the
	// driver needs page_count and wal_checkpoint).
	internal bool
	// denied names the pragma the capture guard refused last, to explain
	// the "not authorized" error SQLite reports for it.
	denied string
	cap    *capture // nil without page capture
	// handle names this conn to the authorizer callback.
	handle cgo.Handle
	// txStmts are BEGIN IMMEDIATE, COMMIT and ROLLBACK, prepared once:
	// preparing them for every transaction would cost more than running
	// them, and would call the authorizer each time.
	txStmts map[string]*sqlite3.SQLiteStmt
	// blanks are the empty declared types handed to mattn's rows (see
	// keepStorageClasses); mattn only reads them.
	blanks []string
}

var (
	_ driver.Conn         = (*conn)(nil)
	_ driver.Checkpointer = (*conn)(nil)
)

// open connects to the database and applies the connection's settings;
// Open and Restore both use it.
func (c *conn) open() error {
	if err := errors.Join(layoutErr, dbLayoutErr); err != nil {
		return err
	}
	if c.handle == 0 {
		c.handle = cgo.NewHandle(c)
	}
	raw, err := (&sqlite3.SQLiteDriver{}).Open(c.s.dsn)
	if err != nil {
		return fmt.Errorf("cgo: open %q: %w", c.s.path, wrapErr(err))
	}
	sc := raw.(*sqlite3.SQLiteConn)
	c.sc = sc
	if err := c.setup(); err != nil {
		c.closeSQLite()
		return err
	}
	return nil
}

func (c *conn) setup() error {
	if c.s.path == "" {
		return c.installHooks()
	}
	mode, err := c.internalQuery("PRAGMA journal_mode=WAL")
	if err != nil {
		return fmt.Errorf("cgo: set WAL mode: %w", err)
	}
	if m, _ := mode[0].(string); m != "wal" {
		return fmt.Errorf("cgo: database %q stayed in journal mode %v, not wal", c.s.path, mode[0])
	}
	if c.s.capture {
		if err := c.internalExec("PRAGMA wal_autocheckpoint=0"); err != nil {
			return err
		}
		// Whatever the WAL holds now (a crash, another program) was not
		// committed through this connection: fold it into the database so
		// capture starts from an empty log.
		if err := c.checkpoint(driver.CheckpointTruncate); err != nil {
			return fmt.Errorf("cgo: checkpoint at open: %w", err)
		}
		c.cap = newCapture(c.sc.GetFilename("main")+"-wal", c.s.checkpointBytes, c.s.pages)
	}
	return c.installHooks()
}

// installHooks registers what capture needs (see capture): commit and WAL
// hooks that record each commit.
func (c *conn) installHooks() error {
	if c.cap != nil {
		setCommitHooks(c.sc, c.cap.flag)
	}
	return c.installAuthorizer()
}

// ready is called at the start of each operation: it refuses a closed
// connection or a cancelled context, and reads any commit not read yet.
func (c *conn) ready(ctx context.Context) error {
	if c.sc == nil {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.denied = ""
	c.afterStatement()
	return nil
}

// afterStatement reads the commits a statement made, if any, while their
// frames are certainly still in the WAL.
func (c *conn) afterStatement() {
	if c.cap != nil && c.cap.dirty() {
		c.cap.read()
		c.maybeCheckpoint()
	}
}

func (c *conn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	if err := c.ready(ctx); err != nil {
		return driver.Result{}, err
	}
	named, err := namedArgs(args)
	if err != nil {
		return driver.Result{}, err
	}
	res, err := c.sc.ExecContext(ctx, sql, named)
	c.afterStatement()
	if err != nil {
		return driver.Result{}, c.explain(err)
	}
	var out driver.Result
	out.RowsAffected, _ = res.RowsAffected()
	out.LastInsertID, _ = res.LastInsertId()
	return out, nil
}

func (c *conn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	named, err := namedArgs(args)
	if err != nil {
		return nil, err
	}
	r, err := c.sc.QueryContext(ctx, sql, named)
	if err != nil {
		c.afterStatement()
		return nil, c.explain(err)
	}
	sr := r.(*sqlite3.SQLiteRows)
	cols := sr.Columns()
	c.keepStorageClasses(sr, len(cols))
	return &rows{c: c, r: sr, cols: cols, vals: make([]sqldriver.Value, len(cols)), out: make([]any, len(cols))}, nil
}

func (c *conn) Begin(ctx context.Context) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.txExec("BEGIN IMMEDIATE")
}

func (c *conn) Commit(ctx context.Context) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	err := c.txExec("COMMIT")
	c.afterStatement()
	return err
}

func (c *conn) Rollback(ctx context.Context) error {
	if c.sc == nil {
		return ErrClosed
	}
	if !c.InTransaction() {
		return nil
	}
	return c.txExec("ROLLBACK")
}

func (c *conn) InTransaction() bool {
	return c.sc != nil && !c.sc.AutoCommit()
}

func (c *conn) PageSize(ctx context.Context) (int, error) {
	if err := c.ready(ctx); err != nil {
		return 0, err
	}
	n, err := c.internalInt("PRAGMA page_size")
	return int(n), err
}

func (c *conn) PageCount(ctx context.Context) (int64, error) {
	if err := c.ready(ctx); err != nil {
		return 0, err
	}
	return c.internalInt("PRAGMA page_count")
}

// Close closes the database; commits not yet taken are dropped.
func (c *conn) Close() error {
	var err error
	if c.sc != nil {
		err = c.closeSQLite()
	}
	if c.handle != 0 {
		c.handle.Delete()
		c.handle = 0
	}
	return wrapErr(err)
}

// closeSQLite closes the SQLite connection and the capture state. The hooks
// are removed first: a statement the user left open keeps SQLite's
// connection alive after close, and must not call back into freed state.
func (c *conn) closeSQLite() error {
	c.closeTxStmts()
	setCommitHooks(c.sc, commitFlag{})
	setAuthorizer(c.sc, 0)
	err := c.sc.Close()
	c.sc = nil
	if c.cap != nil {
		c.cap.close()
		c.cap = nil
	}
	return err
}

// internalExec runs the driver's own statement, unseen by the user's
// authorizer. A background context keeps mattn on its uncached path, so
// the statement is never reused for user SQL that the authorizer did not
// check.
func (c *conn) internalExec(sql string) error {
	c.internal = true
	defer func() { c.internal = false }()
	_, err := c.sc.ExecContext(context.Background(), sql, nil)
	return wrapErr(err)
}

// txExec runs one of the transaction-control statements as an internal
// statement, preparing it on first use.
func (c *conn) txExec(sql string) error {
	c.internal = true
	defer func() { c.internal = false }()
	st := c.txStmts[sql]
	if st == nil {
		s, err := c.sc.Prepare(sql)
		if err != nil {
			return wrapErr(err)
		}
		st = s.(*sqlite3.SQLiteStmt)
		if c.txStmts == nil {
			c.txStmts = make(map[string]*sqlite3.SQLiteStmt, 3)
		}
		c.txStmts[sql] = st
	}
	_, err := st.ExecContext(context.Background(), nil)
	return wrapErr(err)
}

func (c *conn) closeTxStmts() {
	for _, st := range c.txStmts {
		st.Close()
	}
	c.txStmts = nil
}

// internalQuery runs the driver's own single-row statement and returns the
// row. It prepares outside mattn's statement cache for the reason given
// at internalExec.
func (c *conn) internalQuery(sql string) ([]sqldriver.Value, error) {
	c.internal = true
	defer func() { c.internal = false }()
	st, err := c.sc.Prepare(sql)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer st.Close()
	r, err := st.(*sqlite3.SQLiteStmt).QueryContext(context.Background(), nil)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer r.Close()
	sr := r.(*sqlite3.SQLiteRows)
	vals := make([]sqldriver.Value, len(sr.Columns()))
	if err := sr.Next(vals); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("cgo: %s returned no row", sql)
		}
		return nil, wrapErr(err)
	}
	return vals, nil
}

func (c *conn) internalInt(sql string) (int64, error) {
	row, err := c.internalQuery(sql)
	if err != nil {
		return 0, err
	}
	n, ok := row[0].(int64)
	if !ok {
		return 0, fmt.Errorf("cgo: %s returned %T, want an integer", sql, row[0])
	}
	return n, nil
}

// namedArgs normalises the port's arguments for mattn.
func namedArgs(args []any) ([]sqldriver.NamedValue, error) {
	if len(args) == 0 {
		return nil, nil
	}
	out := make([]sqldriver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.NormalizeArg(a)
		if err != nil {
			return nil, fmt.Errorf("cgo: argument %d: %w", i+1, err)
		}
		out[i] = sqldriver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out, nil
}
