package cell

import (
	"context"
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// ErrMultipleRows matches (errors.Is) the *RowCountError of SQL.One on a
// query that returned more than one row.
var ErrMultipleRows = errors.New("cell: more than one row in result set")

// RowCountError is SQL.One's error for a query that did not return
// exactly one row (Durable Objects' cursor.one() throws the same way). It
// matches ErrNoRows when there was none and ErrMultipleRows when there
// were several.
type RowCountError struct {
	// Query is the statement's text.
	Query string
	// Several is true for more than one row, false for none.
	Several bool
}

func (e *RowCountError) Error() string {
	q := e.Query
	if len(q) > 80 {
		q = q[:77] + "..."
	}
	if e.Several {
		return fmt.Sprintf("cell: expected exactly one row from %q, got several", q)
	}
	return fmt.Sprintf("cell: expected exactly one row from %q, got none", q)
}

// Is makes errors.Is(err, ErrNoRows) and errors.Is(err, ErrMultipleRows)
// tell the two cases apart.
func (e *RowCountError) Is(target error) bool {
	return (target == ErrNoRows && !e.Several) || (target == ErrMultipleRows && e.Several)
}

// One runs a query that must return exactly one row: Scan on the result
// returns a *RowCountError when it returned none or several (QueryRow
// takes the first of several without complaint). The query's rows are
// read until a second row shows, then closed.
func (s *SQL) One(ctx context.Context, query string, args ...any) *Row {
	rows, err := s.Query(ctx, query, args...)
	if err != nil {
		return &Row{err: err}
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return &Row{err: err}
		}
		return &Row{err: &RowCountError{Query: query}}
	}
	vals := rows.Values()
	if rows.Next() {
		return &Row{err: &RowCountError{Query: query, Several: true}}
	}
	if err := rows.Err(); err != nil {
		return &Row{err: err}
	}
	return &Row{vals: vals}
}

// All reads every remaining row (copies, valid after the turn) and closes
// the rows: Durable Objects' cursor.toArray(), as values in column order
// (Columns names them).
func (r *Rows) All() ([][]any, error) {
	defer r.Close()
	var out [][]any
	for r.Next() {
		out = append(out, r.Values())
	}
	return out, r.Err()
}

// QueryAll runs a query and returns its column names and every row (see
// Rows.All).
func (s *SQL) QueryAll(ctx context.Context, query string, args ...any) (columns []string, rows [][]any, err error) {
	rs, err := s.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	columns = rs.Columns()
	rows, err = rs.All()
	return columns, rows, err
}

// Counters reports the rows the query has read and written so far, from
// SQLite's own statement counters (see driver.CountedRows for what they
// count): rows read grow as Next steps, rows written are known once the
// statement ran to completion. ok is false when the driver does not count
// (driver.Capabilities.StatementCounters). They stay readable after Close.
func (r *Rows) Counters() (read, written int64, ok bool) {
	r.inst.mu.Lock()
	defer r.inst.mu.Unlock()
	if !r.closed {
		r.readCountersLocked()
	}
	return r.read, r.written, r.counted
}

// readCountersLocked keeps the driver's counters before the rows close.
func (r *Rows) readCountersLocked() {
	if cr, ok := r.rows.(driver.CountedRows); ok {
		r.read, r.written = cr.Counters()
		r.counted = true
	}
}
