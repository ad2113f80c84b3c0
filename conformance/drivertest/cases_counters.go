package drivertest

import (
	"context"

	"github.com/cellb/cellb/core/driver"
)

// counterCases check Capabilities.StatementCounters: declared means
// Exec's Result.Counted and Rows implementing driver.CountedRows, with
// SQLite's counts for the one statement.
func counterCases() []caseDef {
	return []caseDef{
		{"counters/declared", caseCountersDeclared},
		{"counters/values", caseCounterValues},
	}
}

func caseCountersDeclared(c *checkT) {
	conn := c.open(c.path("declared.db"), c.caps.PageCapture)
	res := c.exec(conn, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	rows, err := conn.Query(c.ctx, "SELECT x FROM t")
	if err != nil {
		c.fatalf("query: %v", err)
	}
	defer rows.Close()
	_, counted := rows.(driver.CountedRows)
	if c.caps.StatementCounters {
		if !counted || !res.Counted {
			c.errorf("the driver declares StatementCounters, but its Rows implement driver.CountedRows: %v, Exec's Result.Counted: %v", counted, res.Counted)
		}
		return
	}
	if counted || res.Counted || res.RowsRead != 0 || res.RowsWritten != 0 {
		c.errorf("the driver does not declare StatementCounters, yet its Rows implement driver.CountedRows (%v) or Exec reports counts (%+v)", counted, res)
	}
}

// countRows runs a query to the end and returns its rows and counters.
func (c *checkT) countRows(conn driver.Conn, q string, args ...any) (n, read, written int64) {
	rows, err := conn.Query(context.WithoutCancel(c.ctx), q, args...)
	if err != nil {
		c.fatalf("query %q: %v", q, err)
	}
	defer rows.Close()
	cr, ok := rows.(driver.CountedRows)
	if !ok {
		c.fatalf("the Rows of %q do not implement driver.CountedRows", q)
	}
	if _, w := cr.Counters(); w != 0 {
		c.errorf("%q: rows written %d before the first step, want 0", q, w)
	}
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		c.fatalf("query %q: %v", q, err)
	}
	read, written = cr.Counters()
	return n, read, written
}

func caseCounterValues(c *checkT) {
	if !c.caps.StatementCounters {
		c.skip("the driver does not declare StatementCounters")
	}
	conn := c.open(c.path("counters.db"), c.caps.PageCapture)
	c.exec(conn, "CREATE TABLE t(k INTEGER PRIMARY KEY, v); CREATE TABLE log(k)")
	c.exec(conn, "CREATE TRIGGER t_upd AFTER UPDATE ON t BEGIN INSERT INTO log VALUES(NEW.k); END")
	expect := func(what string, res driver.Result, read, written int64) {
		if !res.Counted || res.RowsRead != read || res.RowsWritten != written {
			c.errorf("%s: Result counted=%v read=%d written=%d, want read=%d written=%d", what, res.Counted, res.RowsRead, res.RowsWritten, read, written)
		}
	}
	expect("INSERT of 5 rows", c.exec(conn, "INSERT INTO t(v) VALUES (1),(2),(3),(4),(5)"), 0, 5)
	// A full scan reads every row; the trigger's writes count.
	expect("UPDATE of every row (trigger writes 5 more)", c.exec(conn, "UPDATE t SET v = v + 1"), 5, 10)
	// Run again (a driver caching statements counts afresh each time).
	expect("the same UPDATE again", c.exec(conn, "UPDATE t SET v = v + 1"), 5, 10)
	// The DELETE scans the 10 log rows; the UPDATE finds its row by key
	// (not counted as read) and writes it and a log row.
	expect("two statements", c.exec(conn, "DELETE FROM log WHERE k > 0; UPDATE t SET v = 0 WHERE k = 1"), 10, 12)
	for range 2 {
		if n, read, written := c.countRows(conn, "SELECT k, v FROM t"); n != 5 || read != 5 || written != 0 {
			c.errorf("SELECT of every row: %d rows, read %d written %d, want 5, 5, 0", n, read, written)
		}
	}
	if n, read, written := c.countRows(conn, "SELECT v FROM t WHERE k = ?", 3); n != 1 || read != 1 || written != 0 {
		c.errorf("SELECT by primary key: %d rows, read %d written %d, want 1, 1, 0", n, read, written)
	}
	if n, read, written := c.countRows(conn, "SELECT k FROM t WHERE v = 99"); n != 0 || read != 5 || written != 0 {
		c.errorf("SELECT scanning every row and returning none: %d rows, read %d written %d, want 0, 5, 0", n, read, written)
	}
	if n, _, written := c.countRows(conn, "DELETE FROM t WHERE k <= 2 RETURNING k"); n != 2 || written != 2 {
		c.errorf("DELETE ... RETURNING: %d rows, written %d, want 2, 2", n, written)
	}
}
