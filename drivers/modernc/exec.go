package modernc

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	sqlite3 "modernc.org/sqlite/lib"
)

// Exec runs one or more statements separated by ';'. The arguments bind to
// the first statement that has parameters; a later statement with
// parameters, or arguments that no statement takes, is an ErrArguments
// error (statements before the mismatch have run). A statement's rows are
// stepped through and discarded.
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	if err := c.ready(ctx); err != nil {
		return driver.Result{}, err
	}
	vals, err := normalizeArgs(args)
	if err != nil {
		return driver.Result{}, err
	}
	before := sqlite3.Xsqlite3_total_changes64(c.tls, c.db)
	c.read = 0
	if err := c.run(ctx, stmtKey{sql: sql}, vals); err != nil {
		return driver.Result{}, err
	}
	return driver.Result{
		RowsAffected: sqlite3.Xsqlite3_changes64(c.tls, c.db),
		LastInsertID: sqlite3.Xsqlite3_last_insert_rowid(c.tls, c.db),
		RowsRead:     c.read,
		RowsWritten:  sqlite3.Xsqlite3_total_changes64(c.tls, c.db) - before,
		Counted:      true,
	}, nil
}

// execInternal runs SQL of the driver's own, which the authorizer does not
// see: the cell's policy governs what its code asks for, not how the
// driver carries it out (transactions, pragmas, page size, checkpoints).
func (c *Conn) execInternal(ctx context.Context, sql string) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	return c.run(ctx, stmtKey{sql: sql, internal: true}, nil)
}

// asInternal marks the duration of a call that runs the driver's own SQL
// (see execInternal) and returns the function that ends it.
func (c *Conn) asInternal(internal bool) (end func()) {
	was := c.internal
	c.internal = internal
	return func() { c.internal = was }
}

// run executes key.sql with vals, interruptible through ctx.
func (c *Conn) run(ctx context.Context, key stmtKey, vals []any) error {
	defer c.asInternal(key.internal)()
	stop := c.watch(ctx)
	err := c.exec(key, vals)
	stop()
	return ctxError(ctx, err)
}

func (c *Conn) exec(key stmtKey, vals []any) error {
	if st := c.cache.take(key); st != 0 {
		return c.runStmt(key, st, vals, true)
	}
	sql := key.sql
	zSQL, err := cStringAlloc(c.tls, sql)
	if err != nil {
		return err
	}
	defer cFree(c.tls, zSQL)
	end := zSQL + uintptr(len(sql))
	pos := zSQL
	bound := false
	for pos < end {
		st, tail, err := c.prepare(pos, int(end-pos))
		if err != nil {
			return err
		}
		if tail <= pos { // nothing consumed: cannot happen, but never spin
			if st != 0 {
				sqlite3.Xsqlite3_finalize(c.tls, st)
			}
			break
		}
		if st == 0 { // only whitespace or a comment
			pos = tail
			continue
		}
		single := pos == zSQL && onlySeparators(sql[tail-zSQL:])
		var stArgs []any
		// A lone statement takes the arguments whatever its parameters, so
		// a mismatch fails before it runs, as with a cached statement.
		if !bound && (single || sqlite3.Xsqlite3_bind_parameter_count(c.tls, st) > 0) {
			stArgs, bound = vals, true
		}
		if err := c.runStmt(key, st, stArgs, single); err != nil {
			return err
		}
		pos = tail
	}
	if !bound && len(vals) > 0 {
		return fmt.Errorf("%w: %d arguments, but no statement has parameters", ErrArguments, len(vals))
	}
	return nil
}

// runStmt binds args, steps st to the end and then caches it (keep) or
// finalizes it.
func (c *Conn) runStmt(key stmtKey, st uintptr, args []any, keep bool) error {
	buf, err := c.bind(st, args)
	sqlite3.Xsqlite3_stmt_status(c.tls, st, sqlite3.SQLITE_STMTSTATUS_FULLSCAN_STEP, 1) // a cached statement counts afresh
	if err == nil {
		for {
			var row bool
			row, err = c.step(st)
			if err != nil || !row {
				break
			}
		}
	}
	c.read += scanned(c, st)
	c.done(key, st, buf, keep)
	if err == nil && c.wal != nil {
		err = c.wal.freshError()
	}
	return err
}

// done resets st and returns it to the cache (keep) or finalizes it, then
// frees its bound bytes.
func (c *Conn) done(key stmtKey, st, buf uintptr, keep bool) {
	if keep {
		sqlite3.Xsqlite3_reset(c.tls, st)
		sqlite3.Xsqlite3_clear_bindings(c.tls, st)
		if old := c.cache.put(key, st); old != 0 {
			sqlite3.Xsqlite3_finalize(c.tls, old)
		}
	} else {
		sqlite3.Xsqlite3_finalize(c.tls, st)
	}
	cFree(c.tls, buf)
}

// prepare compiles the first statement of the n bytes of SQL at zSQL. st is
// 0 when those bytes hold no statement; tail is where the next begins.
func (c *Conn) prepare(zSQL uintptr, n int) (st, tail uintptr, err error) {
	out := c.tls.Alloc(16)
	defer c.tls.Free(16)
	c.refused = ""
	rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, zSQL, int32(n), out, out+8)
	c.rethrow()
	if rc != sqlite3.SQLITE_OK {
		err := sqliteError(c.tls, c.db, rc)
		if c.refused != "" {
			err = fmt.Errorf("modernc: %s: %w", c.refused, err)
		}
		return 0, 0, err
	}
	return cReadPtr(out), cReadPtr(out + 8), nil
}

// step advances st; row reports a result row.
func (c *Conn) step(st uintptr) (row bool, err error) {
	was := c.stepping
	c.stepping = !c.internal
	rc := sqlite3.Xsqlite3_step(c.tls, st)
	c.stepping = was
	c.rethrow()
	switch rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	}
	return false, sqliteError(c.tls, c.db, rc)
}

// onlySeparators reports whether the rest of a SQL text holds nothing but
// whitespace and semicolons, i.e. no further statement.
func onlySeparators(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v', ';':
		default:
			return false
		}
	}
	return true
}

func normalizeArgs(args []any) ([]any, error) {
	if len(args) == 0 {
		return nil, nil
	}
	vals := make([]any, len(args))
	for i, a := range args {
		v, err := driver.NormalizeArg(a)
		if err != nil {
			return nil, fmt.Errorf("%w: argument %d: %w", ErrArgumentType, i+1, err)
		}
		vals[i] = v
	}
	return vals, nil
}

// bind binds normalised args to st's parameters in order. Text and blob
// bytes are copied into one C buffer, returned for the caller to free once
// the statement is reset or finalized (SQLite does not copy them).
func (c *Conn) bind(st uintptr, args []any) (buf uintptr, err error) {
	n := int(sqlite3.Xsqlite3_bind_parameter_count(c.tls, st))
	if n != len(args) {
		return 0, fmt.Errorf("%w: %d arguments for %d parameters", ErrArguments, len(args), n)
	}
	size, hasBytes := 0, false
	for _, a := range args {
		switch v := a.(type) {
		case string:
			size, hasBytes = size+len(v), true
		case []byte:
			size, hasBytes = size+len(v), true
		}
	}
	if hasBytes {
		// Always allocated, even for only empty strings: binding text at
		// address 0 would bind NULL instead.
		if buf, err = cMalloc(c.tls, size); err != nil {
			return 0, err
		}
	}
	off := uintptr(0)
	for i, a := range args {
		idx := int32(i + 1)
		var rc int32
		switch v := a.(type) {
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, st, idx)
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, st, idx, v)
		case float64:
			rc = sqlite3.Xsqlite3_bind_double(c.tls, st, idx, v)
		case string:
			copy(cBytes(buf+off, len(v)), v)
			rc = sqlite3.Xsqlite3_bind_text64(c.tls, st, idx, buf+off, uint64(len(v)), 0, sqlite3.SQLITE_UTF8)
			off += uintptr(len(v))
		case []byte:
			switch {
			case v == nil:
				rc = sqlite3.Xsqlite3_bind_null(c.tls, st, idx)
			case len(v) == 0:
				rc = sqlite3.Xsqlite3_bind_zeroblob(c.tls, st, idx, 0)
			default:
				copy(cBytes(buf+off, len(v)), v)
				rc = sqlite3.Xsqlite3_bind_blob64(c.tls, st, idx, buf+off, uint64(len(v)), 0)
				off += uintptr(len(v))
			}
		default:
			rc = sqlite3.SQLITE_MISUSE // normalizeArgs let through a type it should not have
		}
		if rc != sqlite3.SQLITE_OK {
			sqlite3.Xsqlite3_clear_bindings(c.tls, st)
			cFree(c.tls, buf)
			return 0, fmt.Errorf("modernc: bind argument %d: %w", i+1, sqliteError(c.tls, c.db, rc))
		}
	}
	return buf, nil
}
