package wasm

import (
	"context"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3"
)

// Rows iterates over a query's results. Values returns SQLite's storage
// classes: nil, int64, float64, string or []byte (a zero-length BLOB is an
// empty, non-nil slice).
type Rows struct {
	c       *Conn
	s       *sqlite3.Stmt
	cs      *cachedStmt // the cache entry s belongs to, if any
	ctx     context.Context
	cols    []string
	vals    []any
	blobs   [][]byte // per-column buffers reused from row to row
	err     error
	stepped bool
	closed  bool

	// The statement counters (driver.CountedRows): rows returned, the
	// connection's total changes when the statement started, and the rows
	// written, known once it ran to completion.
	returned, changesBefore, written, scanned int64
	done                                      bool
}

// columnsChanged compares the names (a DROP and an ADD may keep the count).
func (r *Rows) columnsChanged() bool {
	for i, name := range r.cols {
		if r.s.ColumnName(i) != name {
			return true
		}
	}
	return false
}

var _ driver.Rows = (*Rows)(nil)

func newRows(c *Conn, s *sqlite3.Stmt, cs *cachedStmt, ctx context.Context) *Rows {
	if cs != nil {
		cs.inUse = true
	}
	r := &Rows{c: c, s: s, cs: cs, ctx: ctx}
	r.readColumns()
	s.Status(sqlite3.STMTSTATUS_FULLSCAN_STEP, true) // a cached statement counts afresh
	r.changesBefore = c.db.TotalChanges()
	return r
}

var _ driver.CountedRows = (*Rows)(nil)

// Counters are the rows the statement read and wrote so far (see
// driver.CountedRows).
func (r *Rows) Counters() (read, written int64) {
	read = r.returned
	if !r.closed && r.c.db != nil {
		r.scanned = max(r.scanned, scanned(r.s))
	}
	return max(read, r.scanned), r.written
}

// scanned is the rows a statement's full-table scans visited: SQLite
// counts the moves to a next row, so the row a scan starts on is added.
func scanned(s *sqlite3.Stmt) int64 {
	n := int64(s.Status(sqlite3.STMTSTATUS_FULLSCAN_STEP, false))
	if n > 0 {
		n++
	}
	return n
}

// readColumns (re)reads the statement's column names.
func (r *Rows) readColumns() {
	n := r.s.ColumnCount()
	r.cols, r.vals, r.blobs = make([]string, n), make([]any, n), make([][]byte, n)
	for i := range n {
		r.cols[i] = r.s.ColumnName(i)
	}
}

// Columns are the result's column names.
func (r *Rows) Columns() []string { return r.cols }

// Next steps to the next row. The query's context interrupts the step.
func (r *Rows) Next() bool {
	if r.closed || r.err != nil {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return false
	}
	restore := r.c.bind(r.ctx)
	ok := r.s.Step()
	restore()
	if ok {
		r.returned++
	} else if !r.done {
		r.done = true
		r.scanned = max(r.scanned, scanned(r.s))
		if !r.s.ReadOnly() {
			r.written = r.c.db.TotalChanges() - r.changesBefore
		}
	}
	if !ok {
		if err := r.s.Err(); err != nil {
			r.err = r.c.userError(r.ctx, err)
		}
		return false
	}
	if !r.stepped {
		// A cached statement compiled before a schema change is
		// recompiled by SQLite inside the first step, and only then
		// reports its new columns.
		r.stepped = true
		if r.s.ColumnCount() != len(r.cols) || r.columnsChanged() {
			r.readColumns()
		}
	}
	for i := range r.vals {
		switch r.s.ColumnType(i) {
		case sqlite3.INTEGER:
			r.vals[i] = r.s.ColumnInt64(i)
		case sqlite3.FLOAT:
			r.vals[i] = r.s.ColumnFloat(i)
		case sqlite3.TEXT:
			r.vals[i] = r.s.ColumnText(i)
		case sqlite3.BLOB:
			b := r.s.ColumnBlob(i, r.blobs[i][:0])
			if b == nil {
				b = []byte{}
			}
			r.blobs[i] = b
			r.vals[i] = b
		default:
			r.vals[i] = nil
		}
	}
	return true
}

// Values is the current row; the slice and its []byte values are reused
// by the next call to Next.
func (r *Rows) Values() []any { return r.vals }

// Err is the error that ended iteration, if any.
func (r *Rows) Err() error { return r.err }

// Close releases the statement. A write statement (INSERT ... RETURNING)
// finishes, and in autocommit mode commits, here at the latest.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	delete(r.c.rows, r)
	if r.c.db == nil {
		return nil
	}
	r.scanned = max(r.scanned, scanned(r.s))
	var err error
	if r.cs != nil && r.c.cache.byText[r.cs.sql] == r.cs {
		r.cs.inUse = false
		err = r.s.Reset() // back to the cache
	} else {
		err = r.s.Close()
	}
	if err != nil && r.err == nil {
		return r.c.userError(r.ctx, err)
	}
	return nil
}
