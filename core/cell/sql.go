package cell

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// SQL is a cell's SQLite database as user code sees it. Every statement
// runs inside the turn's implicit transaction; statements that would
// escape it or the runtime's rules (BEGIN/COMMIT/SAVEPOINT, ATTACH,
// extension loading, durability pragmas, celld's _cf_* tables) are refused
// with a *DeniedError.
type SQL struct {
	inst *instance
}

// Result is what Exec reports.
type Result = driver.Result

// Exec runs one or more statements separated by ';', binding args (see
// driver.NormalizeArg for the accepted Go types) to the first statement
// that has parameters.
func (s *SQL) Exec(ctx context.Context, query string, args ...any) (Result, error) {
	inst := s.inst
	if err := inst.rt.limits().checkStatement(query, args); err != nil {
		return Result{}, err
	}
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	var res Result
	err = inst.userWrite(ctx, query, func() error {
		var err error
		res, err = inst.db.conn.Exec(ctx, query, args...)
		return err
	})
	return res, err
}

// Query runs one statement and returns its rows. Rows must be closed
// before the turn ends; the runtime closes any left open when it does.
func (s *SQL) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	inst := s.inst
	if err := inst.rt.limits().checkStatement(query, args); err != nil {
		return nil, err
	}
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var dr driver.Rows
	err = inst.userWrite(ctx, query, func() error {
		var err error
		dr, err = inst.db.conn.Query(ctx, query, args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := &Rows{inst: inst, rows: dr, query: query}
	inst.db.rows[r] = struct{}{}
	return r, nil
}

// QueryRow runs a query expected to return at most one row; of several it
// takes the first (One refuses them).
func (s *SQL) QueryRow(ctx context.Context, query string, args ...any) *Row {
	rows, err := s.Query(ctx, query, args...)
	if err != nil {
		return &Row{err: err}
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return &Row{err: err}
		}
		return &Row{err: ErrNoRows}
	}
	vals := rows.Values()
	return &Row{vals: vals, err: rows.Err()}
}

// Transaction runs fn as a nested transaction (a SQLite savepoint inside
// the turn's implicit transaction): if fn returns an error or panics,
// everything fn wrote through this cell's storage is rolled back and the
// error (or panic) is passed on; an error resets nothing, the object goes
// on. Transactions nest.
//
// fn may yield (Await, stub calls, Sync): the transaction is then a
// critical section, as Durable Objects' async transaction() is. The turn
// keeps the input gate and its open transaction across the yield, so no
// other event of the object runs until fn returns, and nothing fn wrote
// commits before the turn does. A stub call from inside it to an object
// that calls back into this one waits for ever (as inside
// BlockConcurrencyWhile).
func (s *SQL) Transaction(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	inst := s.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return err
	}
	inst.db.spDepth++
	name := fmt.Sprintf("cellb_sp%d", inst.db.spDepth)
	_, err = inst.db.conn.Exec(context.WithoutCancel(ctx), rtSQL+"SAVEPOINT "+name)
	if err != nil {
		inst.db.spDepth--
		unlock()
		return fmt.Errorf("cell: open savepoint: %w", err)
	}
	unlock()

	finish := func(rollback bool) error {
		inst.mu.Lock()
		defer inst.mu.Unlock()
		if inst.db.spDepth > 0 {
			inst.db.spDepth--
		}
		if inst.closed || inst.db.conn == nil || !inst.db.conn.InTransaction() {
			return nil
		}
		bg := context.WithoutCancel(ctx)
		if rollback {
			if _, err := inst.db.conn.Exec(bg, rtSQL+"ROLLBACK TO "+name); err != nil {
				return fmt.Errorf("cell: roll back savepoint: %w", err)
			}
		}
		if _, err := inst.db.conn.Exec(bg, rtSQL+"RELEASE "+name); err != nil {
			return fmt.Errorf("cell: release savepoint: %w", err)
		}
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			finish(true)
			panic(v)
		}
	}()
	if ferr := fn(ctx); ferr != nil {
		if rerr := finish(true); rerr != nil {
			return fmt.Errorf("%w (and %v)", ferr, rerr)
		}
		return ferr
	}
	return finish(false)
}

// DatabaseSize is the database's size in bytes (page size × page count).
func (s *SQL) DatabaseSize(ctx context.Context) (int64, error) {
	inst := s.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	ps, err := inst.db.conn.PageSize(ctx)
	if err != nil {
		return 0, err
	}
	pc, err := inst.db.conn.PageCount(ctx)
	if err != nil {
		return 0, err
	}
	return int64(ps) * pc, nil
}

// Rows iterates over a query's results.
type Rows struct {
	inst   *instance
	rows   driver.Rows
	query  string
	closed bool
	err    error
	// read, written and counted are the statement counters kept at Close
	// (cursor.go).
	read, written int64
	counted       bool
}

// Columns are the result's column names.
func (r *Rows) Columns() []string {
	r.inst.mu.Lock()
	defer r.inst.mu.Unlock()
	if r.closed {
		return nil
	}
	return r.rows.Columns()
}

// Next advances to the next row.
func (r *Rows) Next() bool {
	inst := r.inst
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if r.closed {
		if r.err == nil {
			r.err = ErrRowsClosed
		}
		return false
	}
	var ok bool
	inst.guard.asUser(r.query, func() error { ok = r.rows.Next(); return nil })
	if !ok {
		if err := r.rows.Err(); err != nil {
			r.err = inst.guard.userError(err)
		}
	}
	return ok
}

// Scan copies the current row into dest (see driver.ScanValues for the
// supported destination types).
func (r *Rows) Scan(dest ...any) error {
	r.inst.mu.Lock()
	defer r.inst.mu.Unlock()
	if r.closed {
		return ErrRowsClosed
	}
	return driver.ScanValues(r.rows.Values(), dest...)
}

// Values is a copy of the current row.
func (r *Rows) Values() []any {
	r.inst.mu.Lock()
	defer r.inst.mu.Unlock()
	if r.closed {
		return nil
	}
	src := r.rows.Values()
	out := make([]any, len(src))
	for i, v := range src {
		if b, ok := v.([]byte); ok {
			v = append([]byte(nil), b...)
		}
		out[i] = v
	}
	return out
}

// Err is the error that ended the iteration, if any.
func (r *Rows) Err() error {
	r.inst.mu.Lock()
	defer r.inst.mu.Unlock()
	return r.err
}

// Close releases the rows.
func (r *Rows) Close() error {
	r.inst.mu.Lock()
	defer r.inst.mu.Unlock()
	return r.closeLocked()
}

func (r *Rows) closeLocked() error {
	if r.closed {
		return nil
	}
	r.readCountersLocked()
	r.closed = true
	delete(r.inst.db.rows, r)
	return r.rows.Close()
}

// Row is the result of QueryRow.
type Row struct {
	vals []any
	err  error
}

// Scan copies the row into dest, or returns ErrNoRows or the query's error.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return driver.ScanValues(r.vals, dest...)
}

// Err is the query's error, if any.
func (r *Row) Err() error {
	if r.err == ErrNoRows {
		return nil
	}
	return r.err
}
