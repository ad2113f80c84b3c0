package modernc

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	sqlite3 "modernc.org/sqlite/lib"
)

// Query runs one statement and returns its rows. SQL holding a second
// statement is an ErrMultipleStatements error.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	vals, err := normalizeArgs(args)
	if err != nil {
		return nil, err
	}
	return c.query(ctx, stmtKey{sql: sql}, vals)
}

func (c *Conn) query(ctx context.Context, key stmtKey, vals []any) (*rows, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	defer c.asInternal(key.internal)()
	st, keep, err := c.prepareOne(key)
	if err != nil {
		return nil, err
	}
	r := &rows{c: c, ctx: ctx, key: key, st: st, keep: keep}
	if st == 0 { // the SQL holds no statement: no columns, no rows
		if len(vals) > 0 {
			return nil, fmt.Errorf("%w: %d arguments for 0 parameters", ErrArguments, len(vals))
		}
		r.finished = true
		return r, nil
	}
	if r.buf, err = c.bind(st, vals); err != nil {
		c.done(key, st, 0, keep)
		return nil, err
	}
	r.readColumns()
	sqlite3.Xsqlite3_stmt_status(c.tls, st, sqlite3.SQLITE_STMTSTATUS_FULLSCAN_STEP, 1) // a cached statement counts afresh
	r.changesBefore = sqlite3.Xsqlite3_total_changes64(c.tls, c.db)
	r.stop = c.watch(ctx)
	c.rows[r] = struct{}{}
	return r, nil
}

// prepareOne compiles sql, which must hold at most one statement. keep says
// the statement may go back to the cache afterwards.
func (c *Conn) prepareOne(key stmtKey) (st uintptr, keep bool, err error) {
	if st := c.cache.take(key); st != 0 {
		return st, true, nil
	}
	sql := key.sql
	zSQL, err := cStringAlloc(c.tls, sql)
	if err != nil {
		return 0, false, err
	}
	defer cFree(c.tls, zSQL)
	end := zSQL + uintptr(len(sql))
	st, tail, err := c.prepare(zSQL, len(sql))
	if err != nil {
		return 0, false, err
	}
	rest := sql[tail-zSQL:]
	if onlySeparators(rest) {
		return st, st != 0, nil
	}
	// The tail may still be only comments; compile it to find out.
	for pos := tail; pos < end; {
		next, nextTail, err := c.prepare(pos, int(end-pos))
		if err == nil && next == 0 && nextTail > pos {
			pos = nextTail
			continue
		}
		if next != 0 {
			sqlite3.Xsqlite3_finalize(c.tls, next)
		}
		if st != 0 {
			sqlite3.Xsqlite3_finalize(c.tls, st)
		}
		if err != nil {
			return 0, false, err
		}
		return 0, false, fmt.Errorf("%w: %q", ErrMultipleStatements, sql)
	}
	return st, false, nil
}

// rows is an open query. Its statement belongs to it until Close.
type rows struct {
	c        *Conn
	ctx      context.Context
	key      stmtKey
	st       uintptr
	buf      uintptr // bound text and blob bytes
	keep     bool
	stop     func()
	cols     []string
	vals     []any
	blobs    [][]byte // per column, reused from row to row
	err      error
	stepped  bool
	finished bool
	closed   bool

	// The statement counters (counters.go).
	returned, changesBefore, written, scanned int64
}

func (r *rows) Columns() []string { return r.cols }

func (r *rows) Next() bool {
	if r.closed || r.finished {
		return false
	}
	end := r.c.asInternal(r.key.internal)
	row, err := r.c.step(r.st)
	end()
	if err != nil {
		r.err = ctxError(r.ctx, err)
		r.finished = true
		return false
	}
	if !row {
		r.finished = true
		r.countDone()
		if r.c.wal != nil {
			r.err = r.c.wal.freshError()
		}
		return false
	}
	if !r.stepped {
		// A cached statement compiled before a schema change (ALTER TABLE
		// ADD COLUMN, say) is recompiled by SQLite inside the first step,
		// and only then reports its new columns.
		r.stepped = true
		if n := int(sqlite3.Xsqlite3_column_count(r.c.tls, r.st)); n != len(r.cols) || r.columnsChanged() {
			r.readColumns()
		}
	}
	r.returned++
	r.load()
	return true
}

// columnsChanged compares the names (a DROP and an ADD may keep the count).
func (r *rows) columnsChanged() bool {
	for i, name := range r.cols {
		if goString(sqlite3.Xsqlite3_column_name(r.c.tls, r.st, int32(i))) != name {
			return true
		}
	}
	return false
}

// readColumns (re)reads the statement's column names.
func (r *rows) readColumns() {
	tls, st := r.c.tls, r.st
	n := int(sqlite3.Xsqlite3_column_count(tls, st))
	r.cols = make([]string, n)
	for i := range n {
		r.cols[i] = goString(sqlite3.Xsqlite3_column_name(tls, st, int32(i)))
	}
	r.vals = make([]any, n)
	r.blobs = make([][]byte, n)
}

// load copies the current row out of SQLite.
func (r *rows) load() {
	tls, st := r.c.tls, r.st
	for i := range r.vals {
		col := int32(i)
		switch sqlite3.Xsqlite3_column_type(tls, st, col) {
		case sqlite3.SQLITE_INTEGER:
			r.vals[i] = sqlite3.Xsqlite3_column_int64(tls, st, col)
		case sqlite3.SQLITE_FLOAT:
			r.vals[i] = sqlite3.Xsqlite3_column_double(tls, st, col)
		case sqlite3.SQLITE_TEXT:
			p := sqlite3.Xsqlite3_column_text(tls, st, col)
			n := int(sqlite3.Xsqlite3_column_bytes(tls, st, col))
			r.vals[i] = string(cBytes(p, n))
		case sqlite3.SQLITE_BLOB:
			p := sqlite3.Xsqlite3_column_blob(tls, st, col)
			n := int(sqlite3.Xsqlite3_column_bytes(tls, st, col))
			b := r.blobs[i][:0]
			if b == nil {
				b = make([]byte, 0, n)
			}
			b = append(b, cBytes(p, n)...)
			r.blobs[i] = b
			r.vals[i] = b
		default:
			r.vals[i] = nil
		}
	}
}

func (r *rows) Values() []any { return r.vals }

func (r *rows) Err() error { return r.err }

func (r *rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.st == 0 {
		return nil
	}
	r.stop()
	delete(r.c.rows, r)
	r.scanned = max(r.scanned, scanned(r.c, r.st))
	r.c.done(r.key, r.st, r.buf, r.keep)
	r.st, r.buf = 0, 0
	if w := r.c.wal; w != nil && !r.finished {
		// A write statement closed before its end commits on reset, and
		// SQLite's WAL hook does not run for that commit: read it now.
		w.read(r.c, 0)
		return w.freshError()
	}
	return nil
}

// abandon finalizes the statement of rows still open when the connection
// closes; the caller's Rows then reports ErrClosed.
func (r *rows) abandon() {
	r.stop()
	sqlite3.Xsqlite3_finalize(r.c.tls, r.st)
	cFree(r.c.tls, r.buf)
	delete(r.c.rows, r)
	r.st, r.buf = 0, 0
	r.closed, r.finished = true, true
	if r.err == nil {
		r.err = ErrClosed
	}
}
