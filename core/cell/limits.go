package cell

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// Limits caps what one cell stores and runs, as Durable Objects' SQLite
// storage does. A zero field takes the default (Durable Objects' number);
// a negative one means no limit.
type Limits struct {
	// MaxValueBytes caps one string or BLOB argument of a statement, the
	// arguments of one statement together (a row written from them) and a
	// KV key and value together. Default DefaultMaxValueBytes (2 MB).
	MaxValueBytes int64
	// MaxStatementBytes caps the text of one SQL call. Default
	// DefaultMaxStatementBytes (100 KB).
	MaxStatementBytes int64
	// MaxBoundParameters caps the arguments of one SQL call. Default
	// DefaultMaxBoundParameters (100).
	MaxBoundParameters int64
	// MaxColumns caps the columns of a table the object creates or
	// alters. Default DefaultMaxColumns (100).
	MaxColumns int64
	// MaxDatabaseBytes caps the database file: a write that would grow it
	// past the limit fails (SQLite's max_page_count), and its statement is
	// undone. Default DefaultMaxDatabaseBytes (10 GB).
	MaxDatabaseBytes int64
}

// Durable Objects' limits for SQLite-backed objects, the defaults of
// Limits (decimal units, as Cloudflare states them).
const (
	DefaultMaxValueBytes      = 2_000_000
	DefaultMaxStatementBytes  = 100_000
	DefaultMaxBoundParameters = 100
	DefaultMaxColumns         = 100
	DefaultMaxDatabaseBytes   = 10_000_000_000
)

// Limit names one limit in a *LimitError.
type Limit string

// The limits a *LimitError names.
const (
	LimitValueSize       Limit = "value size"
	LimitRowSize         Limit = "row size"
	LimitStatementSize   Limit = "statement size"
	LimitBoundParameters Limit = "bound parameters"
	LimitColumns         Limit = "columns per table"
	LimitDatabaseSize    Limit = "database size"
)

// LimitError is returned for a statement or KV call past one of the
// cell's Limits; what it would have written is not stored.
type LimitError struct {
	Limit Limit
	// Max is the limit in force; Got what was asked for (0 when SQLite
	// refused the write without saying how much it needed).
	Max, Got int64
	// Detail names the table or key concerned, if any.
	Detail string
	// Err is the driver's error, when SQLite enforced the limit.
	Err error
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("cell: %s limit exceeded", e.Limit)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	if e.Got > 0 {
		return s + fmt.Sprintf(": %d, at most %d", e.Got, e.Max)
	}
	return s + fmt.Sprintf(": at most %d", e.Max)
}

func (e *LimitError) Unwrap() error { return e.Err }

// limits is the runtime's Limits with the defaults filled in (negative:
// no limit).
func (rt *Runtime) limits() Limits {
	l := rt.opts.Limits
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxValueBytes, DefaultMaxValueBytes)
	def(&l.MaxStatementBytes, DefaultMaxStatementBytes)
	def(&l.MaxBoundParameters, DefaultMaxBoundParameters)
	def(&l.MaxColumns, DefaultMaxColumns)
	def(&l.MaxDatabaseBytes, DefaultMaxDatabaseBytes)
	return l
}

// checkStatement checks a user SQL call's text and arguments before it
// runs.
func (l Limits) checkStatement(query string, args []any) error {
	if l.MaxStatementBytes > 0 && int64(len(query)) > l.MaxStatementBytes {
		return &LimitError{Limit: LimitStatementSize, Max: l.MaxStatementBytes, Got: int64(len(query))}
	}
	if l.MaxBoundParameters > 0 && int64(len(args)) > l.MaxBoundParameters {
		return &LimitError{Limit: LimitBoundParameters, Max: l.MaxBoundParameters, Got: int64(len(args))}
	}
	if l.MaxValueBytes <= 0 {
		return nil
	}
	var total int64
	for i, a := range args {
		n := valueSize(a)
		if n > l.MaxValueBytes {
			return &LimitError{Limit: LimitValueSize, Max: l.MaxValueBytes, Got: n, Detail: fmt.Sprintf("argument %d", i+1)}
		}
		total += n
	}
	if total > l.MaxValueBytes {
		return &LimitError{Limit: LimitRowSize, Max: l.MaxValueBytes, Got: total, Detail: "the arguments together"}
	}
	return nil
}

// checkKV checks a KV entry (key and value together, as Durable Objects'
// SQLite backend counts them).
func (l Limits) checkKV(key string, col any) error {
	if l.MaxValueBytes <= 0 {
		return nil
	}
	if n := int64(len(key)) + valueSize(col); n > l.MaxValueBytes {
		return &LimitError{Limit: LimitValueSize, Max: l.MaxValueBytes, Got: n, Detail: "KV key and value"}
	}
	return nil
}

func valueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	}
	return 8
}

// applyDatabaseLimitLocked sets SQLite's max_page_count on a connection
// that has not had it yet, so SQLite itself refuses (SQLITE_FULL) a write
// that would grow the database past Limits.MaxDatabaseBytes. The pragma
// belongs to the connection, so each new one gets it. The caller holds
// inst.mu.
func (inst *instance) applyDatabaseLimitLocked(ctx context.Context) error {
	conn := inst.db.conn
	if conn == nil || conn == inst.db.limited {
		return nil
	}
	max := inst.rt.limits().MaxDatabaseBytes
	if max > 0 {
		ps, err := conn.PageSize(ctx)
		if err != nil {
			return err
		}
		pages := max / int64(ps)
		if _, err := conn.Exec(ctx, fmt.Sprintf("%sPRAGMA max_page_count = %d", rtSQL, pages)); err != nil {
			return fmt.Errorf("cell: set the database size limit: %w", err)
		}
	}
	inst.db.limited = conn
	return nil
}

// limitError turns SQLite's "database or disk is full" into the database
// size limit's *LimitError.
func (inst *instance) limitError(err error) error {
	var se *driver.SQLiteError
	if err == nil || !errors.As(err, &se) || se.Code != driver.CodeFull {
		return err
	}
	return &LimitError{Limit: LimitDatabaseSize, Max: inst.rt.limits().MaxDatabaseBytes, Err: err}
}

// runUser runs user SQL on the file under the cell's limits: the
// database size limit is set on the connection, a statement that may add
// columns is checked for the column limit, and SQLite's refusal to grow
// the database is reported as the size limit's *LimitError. The caller
// holds inst.mu inside a turn.
func (inst *instance) runUser(ctx context.Context, query string, fn func() error) error {
	if err := inst.applyDatabaseLimitLocked(ctx); err != nil {
		return err
	}
	inTx := inst.db.conn.InTransaction()
	err := inst.limitColumns(ctx, query, func() error { return inst.guard.asUser(query, fn) })
	return inst.writeFailed(inTx, err)
}

// writeFailed reports a failed write: SQLite's refusal to grow the
// database past the limit becomes the size limit's *LimitError, and if
// SQLite cancelled the turn's whole transaction on the way (it does when
// it cannot finish growing the file), the turn's earlier writes are gone,
// so the object is reset (the *BrokenObjectError's Err is the cause) rather
// than left to go on as if they were stored. The caller holds inst.mu.
func (inst *instance) writeFailed(inTx bool, err error) error {
	err = inst.limitError(err)
	if err == nil || !inTx || inst.db.conn.InTransaction() {
		return err
	}
	inst.db.spDepth = 0
	inst.alarm.discard()
	return inst.breakNow("SQLite rolled back the turn's transaction: "+err.Error(), err)
}

// mayAddColumns reports whether a statement may create or widen a table
// (CREATE [TEMP|VIRTUAL] TABLE or ALTER TABLE in its text): only those are
// checked for the column limit, inside a savepoint. The cheap test for
// "table" spares the pattern most statements.
func mayAddColumns(query string) bool {
	return containsFold(query, "table") && tableDDL.MatchString(query)
}

var tableDDL = regexp.MustCompile(`(?i)\b(create\s+((temp|temporary|virtual)\s+)?table|alter\s+table)\b`)

// containsFold is strings.Contains ignoring ASCII case, without copying
// the statement (it runs for every user statement).
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// limitColumns runs a user statement that may create or widen a table
// inside a savepoint and undoes it if a table of the object then has more
// columns than Limits.MaxColumns. The caller holds inst.mu inside a turn.
func (inst *instance) limitColumns(ctx context.Context, query string, run func() error) error {
	max := inst.rt.limits().MaxColumns
	if max <= 0 || !mayAddColumns(query) {
		return run()
	}
	conn := inst.db.conn
	bg := context.WithoutCancel(ctx)
	if _, err := conn.Exec(bg, rtSQL+"SAVEPOINT cellb_limits"); err != nil {
		return fmt.Errorf("cell: open the column limit's savepoint: %w", err)
	}
	err := run()
	if err == nil {
		err = inst.checkColumnsLocked(bg, max)
	}
	if err != nil {
		if _, rerr := conn.Exec(bg, rtSQL+"ROLLBACK TO cellb_limits"); rerr != nil {
			return fmt.Errorf("%w (and undoing it failed: %v)", err, rerr)
		}
	}
	if _, rerr := conn.Exec(bg, rtSQL+"RELEASE cellb_limits"); rerr != nil && err == nil {
		err = fmt.Errorf("cell: release the column limit's savepoint: %w", rerr)
	}
	return err
}

// checkColumnsLocked finds a table of the object with more than max
// columns.
func (inst *instance) checkColumnsLocked(ctx context.Context, max int64) error {
	rows, err := inst.db.conn.Query(ctx, rtSQL+`SELECT m.name, (SELECT count(*) FROM pragma_table_info(m.name)) AS n FROM sqlite_schema m
WHERE m.type = 'table' AND m.name NOT LIKE '\_cf\_%' ESCAPE '\' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND n > ? LIMIT 1`, max)
	if err != nil {
		return fmt.Errorf("cell: count columns: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		var name string
		var n int64
		if err := driver.ScanValues(rows.Values(), &name, &n); err != nil {
			return err
		}
		return &LimitError{Limit: LimitColumns, Max: max, Got: n, Detail: "table " + name}
	}
	return rows.Err()
}
