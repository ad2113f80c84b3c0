package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cellb/cellb/core/driver"
)

// sqlCases check the plain Conn contract: arguments, rows, statements,
// errors, transactions, sizes, cancellation and closing.
func sqlCases() []caseDef {
	return []caseDef{
		{"sql/open", caseOpen},
		{"sql/arguments", caseArguments},
		{"sql/storage-classes", caseStorageClasses},
		{"sql/multi-statement", caseMultiStatement},
		{"sql/schema-change", caseSchemaChange},
		{"sql/result", caseResult},
		{"sql/errors", caseErrors},
		{"sql/transactions", caseTransactions},
		{"sql/begin-immediate", caseBeginImmediate},
		{"sql/savepoints", caseSavepoints},
		{"sql/page-size-count", casePageSizeCount},
		{"sql/context", caseContext},
		{"sql/closed", caseClosed},
		{"sql/memory", caseMemory},
	}
}

func caseOpen(c *checkT) {
	if n := c.h.Driver.Name(); n == "" || strings.ContainsAny(n, " /\t\n") {
		c.errorf("Name() = %q: want a short non-empty name without spaces or slashes", n)
	}
	missing := filepath.Join(c.dir, "no-such-dir", "x.db")
	if conn, err := c.h.Driver.Open(c.ctx, driver.Config{Path: missing}); err == nil {
		// Opening may be lazy; the first statement must then fail.
		c.conns = append(c.conns, conn)
		if _, err := conn.Exec(c.ctx, "CREATE TABLE t(x)"); err == nil {
			c.errorf("Open and CREATE TABLE succeeded in a directory that does not exist (%s)", missing)
		}
	}
	path := c.path("open.db")
	conn := c.open(path, false)
	c.exec(conn, "CREATE TABLE t(x)")
	c.exec(conn, "INSERT INTO t VALUES (1)")
	c.close(conn)
	conn = c.open(path, false)
	if got := c.queryOne(conn, "SELECT count(*) FROM t"); got != int64(1) {
		c.errorf("after reopening, the table holds %v rows, want 1: data did not persist in %s", got, path)
	}
}

func caseArguments(c *checkT) {
	conn := c.open(c.path("args.db"), false)
	c.exec(conn, "CREATE TABLE args(id INTEGER PRIMARY KEY, v)")
	str, i64, f64 := "pointer", int64(-77), 2.5
	big := bytes.Repeat([]byte{0xA5, 0x5A, 0x00}, 400_000)
	cases := []struct {
		name     string
		arg      any
		want     any
		wantType string
	}{
		{"nil", nil, nil, "null"},
		{"int64", int64(-5), int64(-5), "integer"},
		{"max int64", int64(math.MaxInt64), int64(math.MaxInt64), "integer"},
		{"min int64", int64(math.MinInt64), int64(math.MinInt64), "integer"},
		{"float64", 1.5, 1.5, "real"},
		{"+Inf", math.Inf(1), math.Inf(1), "real"},
		{"string", "héllo, wörld", "héllo, wörld", "text"},
		{"empty string", "", "", "text"},
		{"string with NUL", "a\x00b", "a\x00b", "text"},
		{"bytes", []byte{0, 1, 2, 0xff}, []byte{0, 1, 2, 0xff}, "blob"},
		{"empty bytes", []byte{}, []byte{}, "blob"},
		{"1.2 MB bytes", big, big, "blob"},
		{"int", int(7), int64(7), "integer"},
		{"int8", int8(-8), int64(-8), "integer"},
		{"int16", int16(-16), int64(-16), "integer"},
		{"int32", int32(-32), int64(-32), "integer"},
		{"uint8", uint8(200), int64(200), "integer"},
		{"uint16", uint16(60000), int64(60000), "integer"},
		{"uint32", uint32(4_000_000_000), int64(4_000_000_000), "integer"},
		{"uint", uint(9), int64(9), "integer"},
		{"uint64", uint64(math.MaxInt64), int64(math.MaxInt64), "integer"},
		{"float32", float32(0.25), 0.25, "real"},
		{"true", true, int64(1), "integer"},
		{"false", false, int64(0), "integer"},
		{"*string", &str, "pointer", "text"},
		{"nil *string", (*string)(nil), nil, "null"},
		{"*int64", &i64, int64(-77), "integer"},
		{"nil *int64", (*int64)(nil), nil, "null"},
		{"*float64", &f64, 2.5, "real"},
		{"nil *float64", (*float64)(nil), nil, "null"},
	}
	for i, tc := range cases {
		id := int64(i + 1)
		if _, err := conn.Exec(c.ctx, "INSERT INTO args(id, v) VALUES (?, ?)", id, tc.arg); err != nil {
			c.errorf("binding %s (%T): %v", tc.name, tc.arg, err)
			continue
		}
		row := c.query(conn, "SELECT v, typeof(v) FROM args WHERE id = ?", id)
		if len(row) != 1 {
			c.errorf("binding %s: row not found", tc.name)
			continue
		}
		if !sameValue(row[0][0], tc.want) {
			c.errorf("binding %s (%T): read back %s, want %s", tc.name, tc.arg, showValue(row[0][0]), showValue(tc.want))
		}
		if row[0][1] != tc.wantType {
			c.errorf("binding %s (%T): stored as %v, want %s", tc.name, tc.arg, row[0][1], tc.wantType)
		}
	}
	// Same values through a query's arguments (bound to a SELECT).
	if got := c.queryOne(conn, "SELECT ? + ? + ?", int32(1), uint8(2), true); got != int64(4) {
		c.errorf("SELECT ?+?+? with int32, uint8, bool = %s, want 4", showValue(got))
	}
	before := c.queryOne(conn, "SELECT count(*) FROM args")
	for _, bad := range []any{struct{}{}, uint64(math.MaxUint64), map[string]int{}} {
		if _, err := conn.Exec(c.ctx, "INSERT INTO args(v) VALUES (?)", bad); err == nil {
			c.errorf("binding an unsupported %T succeeded; NormalizeArg rejects it", bad)
		}
		if _, err := conn.Query(c.ctx, "SELECT ?", bad); err == nil {
			c.errorf("Query with an unsupported %T argument succeeded; NormalizeArg rejects it", bad)
		}
	}
	if after := c.queryOne(conn, "SELECT count(*) FROM args"); after != before {
		c.errorf("a rejected argument still inserted rows: %v before, %v after", before, after)
	}
}

func caseStorageClasses(c *checkT) {
	conn := c.open(c.path("classes.db"), false)
	rows, err := conn.Query(c.ctx, "SELECT 1 AS i, 1.5 AS r, 'x' AS t, x'00ff' AS b, NULL AS n, x'' AS eb, '' AS et")
	if err != nil {
		c.fatalf("Query: %v", err)
	}
	if cols := rows.Columns(); !slices.Equal(cols, []string{"i", "r", "t", "b", "n", "eb", "et"}) {
		c.errorf("Columns() = %q, want the aliases i r t b n eb et", cols)
	}
	if !rows.Next() {
		c.fatalf("no row: %v", rows.Err())
	}
	got := copyRow(rows.Values())
	want := []any{int64(1), 1.5, "x", []byte{0, 0xff}, nil, []byte{}, ""}
	if len(got) != len(want) {
		c.fatalf("row has %d values, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameValue(got[i], want[i]) {
			c.errorf("column %d: %s, want %s (nil, int64, float64, string or []byte; a zero-length blob is a non-nil []byte)", i, showValue(got[i]), showValue(want[i]))
		}
	}
	if rows.Next() {
		c.errorf("a one-row query returned a second row")
	}
	if err := rows.Err(); err != nil {
		c.errorf("Err after the last row: %v", err)
	}
	if err := rows.Close(); err != nil {
		c.errorf("Rows.Close: %v", err)
	}

	// Values of one row stay intact until the next call to Next.
	c.exec(conn, "CREATE TABLE s(k INTEGER PRIMARY KEY, t TEXT, b BLOB)")
	for i := range 50 {
		c.exec(conn, "INSERT INTO s VALUES (?, ?, ?)", i, strings.Repeat(string(rune('a'+i%26)), i+1), bytes.Repeat([]byte{byte(i)}, i+1))
	}
	rows, err = conn.Query(c.ctx, "SELECT k, t, b FROM s ORDER BY k")
	if err != nil {
		c.fatalf("Query: %v", err)
	}
	n := 0
	for rows.Next() {
		v := rows.Values()
		k, _ := v[0].(int64)
		wantT := strings.Repeat(string(rune('a'+k%26)), int(k)+1)
		if v[1] != wantT || !bytes.Equal(asBytes(v[2]), bytes.Repeat([]byte{byte(k)}, int(k)+1)) {
			c.errorf("row %d read back wrong: %s", k, formatRow(v))
			break
		}
		n++
	}
	if err := rows.Err(); err != nil {
		c.errorf("iterating: %v", err)
	}
	rows.Close()
	if n != 50 {
		c.errorf("iterated %d rows, want 50", n)
	}

	// Declared column types never change what comes back: a library's
	// habit of turning DATETIME into time.Time or BOOLEAN into bool would
	// lose the stored value.
	c.exec(conn, "CREATE TABLE typed(d DATETIME, ts TIMESTAMP, dt DATE, b BOOLEAN, j JSON)")
	c.exec(conn, "INSERT INTO typed VALUES ('2024-01-02 03:04:05', 'not a time', 20240102, 5, '{\"a\":1}')")
	got = c.query(conn, "SELECT d, ts, dt, b, j FROM typed")[0]
	want = []any{"2024-01-02 03:04:05", "not a time", int64(20240102), int64(5), `{"a":1}`}
	for i := range want {
		if !sameValue(got[i], want[i]) {
			c.errorf("typed column %d: %s, want the stored %s unchanged (declared types must not convert values)", i, showValue(got[i]), showValue(want[i]))
		}
	}

	// An empty result still has columns and ends cleanly.
	rows, err = conn.Query(c.ctx, "SELECT k, t FROM s WHERE k < 0")
	if err != nil {
		c.fatalf("Query: %v", err)
	}
	if cols := rows.Columns(); !slices.Equal(cols, []string{"k", "t"}) {
		c.errorf("Columns() of an empty result = %q, want [k t]", cols)
	}
	if rows.Next() {
		c.errorf("an empty result returned a row")
	}
	if err := rows.Err(); err != nil {
		c.errorf("Err of an empty result: %v", err)
	}
	rows.Close()
}

func caseMultiStatement(c *checkT) {
	conn := c.open(c.path("multi.db"), false)
	c.exec(conn, "CREATE TABLE m(x); INSERT INTO m VALUES (1); INSERT INTO m VALUES (2);")
	if got := c.queryOne(conn, "SELECT count(*) FROM m"); got != int64(2) {
		c.errorf("a three-statement Exec left %v rows, want 2: not every statement ran", got)
	}
	c.exec(conn, "INSERT INTO m VALUES (3); INSERT INTO m VALUES (?)", int64(4))
	if got := c.query(conn, "SELECT x FROM m WHERE x > 2 ORDER BY x"); len(got) != 2 || got[1][0] != int64(4) {
		c.errorf("arguments must bind to the first statement that has parameters: rows after it are %v, want [3] [4]", got)
	}
	c.exec(conn, "  INSERT INTO m VALUES (5) ; -- trailing comment\n  /* and another */  ")
	if got := c.queryOne(conn, "SELECT count(*) FROM m WHERE x = 5"); got != int64(1) {
		c.errorf("a statement followed by comments and whitespace did not run")
	}
	_, err := conn.Exec(c.ctx, "INSERT INTO m VALUES (6); INSERT INTO nosuch VALUES (1)")
	if err == nil || !strings.Contains(err.Error(), "no such table: nosuch") {
		c.errorf("an error in the second statement of an Exec: got %v, want SQLite's \"no such table: nosuch\"", err)
	}
}

// caseSchemaChange: a query repeated after ALTER TABLE sees the new shape
// (a driver that caches prepared statements must notice the recompile).
func caseSchemaChange(c *checkT) {
	conn := c.open(c.path("schema.db"), false)
	c.exec(conn, "CREATE TABLE s(a, b); INSERT INTO s VALUES (1, 2)")
	for i := 0; i < 2; i++ {
		c.query(conn, "SELECT * FROM s")
	}
	c.exec(conn, "ALTER TABLE s ADD COLUMN c DEFAULT 5")
	rows, err := conn.Query(c.ctx, "SELECT * FROM s")
	if err != nil {
		c.fatalf("SELECT after ALTER TABLE: %v", err)
	}
	var got [][]any
	for rows.Next() {
		got = append(got, copyRow(rows.Values()))
	}
	cols := rows.Columns()
	rows.Close()
	if len(cols) != 3 || len(got) != 1 || len(got[0]) != 3 || got[0][2] != int64(5) {
		c.errorf("SELECT * after ALTER TABLE ADD COLUMN: columns %v, rows %v; want a, b, c = 1, 2, 5", cols, got)
	}
	c.exec(conn, "ALTER TABLE s DROP COLUMN a")
	if got := c.query(conn, "SELECT * FROM s"); len(got) != 1 || len(got[0]) != 2 || got[0][0] != int64(2) {
		c.errorf("SELECT * after ALTER TABLE DROP COLUMN: rows %v; want b, c = 2, 5", got)
	}
}

func caseResult(c *checkT) {
	conn := c.open(c.path("result.db"), false)
	c.exec(conn, "CREATE TABLE r(id INTEGER PRIMARY KEY, x)")
	res := c.exec(conn, "INSERT INTO r(id, x) VALUES (42, 'a')")
	if res.LastInsertID != 42 || res.RowsAffected != 1 {
		c.errorf("INSERT with rowid 42: Result %+v, want LastInsertID 42, RowsAffected 1", res)
	}
	res = c.exec(conn, "INSERT INTO r(x) VALUES ('b')")
	if res.LastInsertID != 43 {
		c.errorf("INSERT after rowid 42: LastInsertID %d, want 43", res.LastInsertID)
	}
	c.exec(conn, "INSERT INTO r(x) VALUES ('c')")
	res = c.exec(conn, "UPDATE r SET x = 'z' WHERE id >= 42")
	if res.RowsAffected != 3 {
		c.errorf("UPDATE of 3 rows: RowsAffected %d, want 3", res.RowsAffected)
	}
	res = c.exec(conn, "DELETE FROM r WHERE id = 43")
	if res.RowsAffected != 1 {
		c.errorf("DELETE of 1 row: RowsAffected %d, want 1", res.RowsAffected)
	}
}

func caseErrors(c *checkT) {
	conn := c.open(c.path("errors.db"), false)
	expect := func(what string, err error, msg string, code, ext int) {
		if err == nil {
			c.errorf("%s succeeded, want SQLite's error %q", what, msg)
			return
		}
		if !strings.Contains(err.Error(), msg) {
			c.errorf("%s: error %q does not carry SQLite's message %q", what, err, msg)
		}
		if errors.Is(err, driver.ErrNotAuthorized) {
			c.errorf("%s: error %q matches ErrNotAuthorized, but no authorizer is set", what, err)
		}
		var se *driver.SQLiteError
		if errors.As(err, &se) && code != 0 {
			if se.Code != code {
				c.errorf("%s: SQLiteError.Code %d, want %d", what, se.Code, code)
			}
			if ext != 0 && se.ExtendedCode != ext {
				c.errorf("%s: SQLiteError.ExtendedCode %d, want %d", what, se.ExtendedCode, ext)
			}
		}
	}
	_, err := conn.Exec(c.ctx, "SELEC 1")
	expect("Exec(SELEC 1)", err, `near "SELEC": syntax error`, driver.CodeError, 0)
	_, err = conn.Query(c.ctx, "SELECT * FROM nosuch")
	expect("Query of a missing table", err, "no such table: nosuch", driver.CodeError, 0)

	c.exec(conn, "CREATE TABLE u(x UNIQUE, y NOT NULL DEFAULT 0)")
	c.exec(conn, "INSERT INTO u(x) VALUES (1)")
	_, err = conn.Exec(c.ctx, "INSERT INTO u(x) VALUES (1)")
	expect("a duplicate UNIQUE value", err, "UNIQUE constraint failed: u.x", driver.CodeConstraint, 2067)
	_, err = conn.Exec(c.ctx, "INSERT INTO u(x, y) VALUES (2, NULL)")
	expect("a NULL in a NOT NULL column", err, "NOT NULL constraint failed: u.y", driver.CodeConstraint, 1299)

	// An error raised while stepping, not while preparing, must surface
	// from Query or from Rows.Err.
	rows, err := conn.Query(c.ctx, "SELECT abs(-9223372036854775808)")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
	}
	expect("a runtime error while stepping", err, "integer overflow", driver.CodeError, 0)

	// The connection is still usable after errors.
	if got := c.queryOne(conn, "SELECT count(*) FROM u"); got != int64(1) {
		c.errorf("after failed statements the table holds %v rows, want 1", got)
	}
}

func caseTransactions(c *checkT) {
	conn := c.open(c.path("tx.db"), false)
	c.exec(conn, "CREATE TABLE t(x UNIQUE)")
	count := func() any { return c.queryOne(conn, "SELECT count(*) FROM t") }
	if conn.InTransaction() {
		c.errorf("InTransaction is true on a fresh connection")
	}
	c.begin(conn)
	if !conn.InTransaction() {
		c.errorf("InTransaction is false after Begin")
	}
	if err := conn.Begin(c.ctx); err == nil {
		c.errorf("Begin inside a transaction succeeded; SQLite cannot nest BEGIN")
	}
	if !conn.InTransaction() {
		c.errorf("a failed nested Begin ended the transaction")
	}
	c.exec(conn, "INSERT INTO t VALUES (1)")
	// A failed statement (ABORT) keeps the transaction and its earlier work.
	if _, err := conn.Exec(c.ctx, "INSERT INTO t VALUES (1)"); err == nil {
		c.errorf("duplicate insert succeeded")
	}
	if !conn.InTransaction() {
		c.errorf("a constraint error ended the transaction; SQLite keeps it open")
	}
	c.commit(conn)
	if conn.InTransaction() {
		c.errorf("InTransaction is true after Commit")
	}
	if got := count(); got != int64(1) {
		c.errorf("after Commit the table holds %v rows, want 1", got)
	}

	c.begin(conn)
	c.exec(conn, "INSERT INTO t VALUES (2)")
	c.rollback(conn)
	if conn.InTransaction() {
		c.errorf("InTransaction is true after Rollback")
	}
	if got := count(); got != int64(1) {
		c.errorf("after Rollback the table holds %v rows, want 1", got)
	}
	if err := conn.Rollback(c.ctx); err != nil {
		c.errorf("Rollback with no transaction open: %v; it must be a no-op", err)
	}
	if err := conn.Commit(c.ctx); err == nil {
		c.errorf("Commit with no transaction open succeeded")
	}

	// Transactions opened in SQL are transactions too.
	c.exec(conn, "BEGIN")
	if !conn.InTransaction() {
		c.errorf("InTransaction is false after Exec(BEGIN)")
	}
	c.exec(conn, "INSERT INTO t VALUES (3)")
	c.exec(conn, "COMMIT")
	if conn.InTransaction() {
		c.errorf("InTransaction is true after Exec(COMMIT)")
	}
	c.exec(conn, "BEGIN; INSERT INTO t VALUES (4); COMMIT")
	if got := count(); got != int64(3) {
		c.errorf("after SQL transactions the table holds %v rows, want 3", got)
	}
	// Rollback through the driver ends a transaction opened in SQL.
	c.exec(conn, "BEGIN; INSERT INTO t VALUES (5)")
	c.rollback(conn)
	if conn.InTransaction() || count() != int64(3) {
		c.errorf("Rollback did not abandon a transaction opened with Exec(BEGIN)")
	}
}

func caseBeginImmediate(c *checkT) {
	path := c.path("immediate.db")
	a := c.open(path, false)
	c.exec(a, "CREATE TABLE t(x)")
	// A driver may hold its file exclusively (locking_mode=EXCLUSIVE):
	// then no other connection can even read it, no writer can slip in
	// between Begin and the first write, and the claim holds trivially.
	b, err := c.h.Driver.Open(c.ctx, driver.Config{Path: path})
	if err == nil {
		c.conns = append(c.conns, b)
		_, err = b.Exec(c.ctx, "PRAGMA busy_timeout = 0")
		if err == nil {
			err = c.queryErr(b, "SELECT count(*) FROM t")
		}
	}
	if err != nil {
		if !isBusy(err) {
			c.fatalf("a second connection to an idle database failed, but not with SQLITE_BUSY or SQLITE_LOCKED: %v", err)
		}
		c.begin(a)
		c.exec(a, "INSERT INTO t VALUES ('a')")
		c.commit(a)
		c.skip("the driver locks its database file exclusively (a second connection gets %v), so no other writer can interleave and BEGIN IMMEDIATE cannot be observed", err)
	}
	c.begin(a)
	_, err = b.Exec(c.ctx, "INSERT INTO t VALUES ('other')")
	if err == nil {
		c.errorf("another connection wrote while a transaction was open after Begin: Begin must be BEGIN IMMEDIATE (take the write lock at once)")
	} else if !isBusy(err) {
		c.errorf("the other writer failed with %v, want SQLITE_BUSY", err)
	}
	c.exec(a, "INSERT INTO t VALUES ('a')")
	c.commit(a)
	if _, err := b.Exec(c.ctx, "INSERT INTO t VALUES ('b')"); err != nil {
		c.errorf("after Commit the other connection still cannot write: %v", err)
	}
	if got := c.queryOne(a, "SELECT count(*) FROM t"); got != int64(2) {
		c.errorf("table holds %v rows, want 2", got)
	}
}

func caseSavepoints(c *checkT) {
	conn := c.open(c.path("savepoints.db"), false)
	c.exec(conn, "CREATE TABLE t(x)")
	rows := func() []int64 {
		var out []int64
		for _, r := range c.query(conn, "SELECT x FROM t ORDER BY x") {
			n, _ := r[0].(int64)
			out = append(out, n)
		}
		return out
	}
	c.begin(conn)
	c.exec(conn, "INSERT INTO t VALUES (1)")
	c.exec(conn, "SAVEPOINT a")
	c.exec(conn, "INSERT INTO t VALUES (2)")
	c.exec(conn, "ROLLBACK TO a")
	c.exec(conn, "INSERT INTO t VALUES (3)")
	c.exec(conn, "RELEASE a")
	if !conn.InTransaction() {
		c.errorf("RELEASE of an inner savepoint ended the transaction")
	}
	c.commit(conn)
	if got := rows(); !slices.Equal(got, []int64{1, 3}) {
		c.errorf("after ROLLBACK TO inside a transaction: rows %v, want [1 3]", got)
	}

	// A savepoint outside a transaction opens one; releasing the outermost
	// commits it.
	c.exec(conn, "SAVEPOINT sp_outer")
	if !conn.InTransaction() {
		c.errorf("InTransaction is false inside SAVEPOINT sp_outer")
	}
	c.exec(conn, "INSERT INTO t VALUES (4)")
	c.exec(conn, "SAVEPOINT sp_inner")
	c.exec(conn, "INSERT INTO t VALUES (5)")
	c.exec(conn, "RELEASE sp_inner")
	c.exec(conn, "ROLLBACK TO sp_outer")
	c.exec(conn, "RELEASE sp_outer")
	if conn.InTransaction() {
		c.errorf("InTransaction is true after RELEASE of the outermost savepoint")
	}
	if got := rows(); !slices.Equal(got, []int64{1, 3}) {
		c.errorf("after ROLLBACK TO the outer savepoint: rows %v, want [1 3]", got)
	}
	c.exec(conn, "SAVEPOINT s; INSERT INTO t VALUES (6); RELEASE s")
	// Commit through the driver releases open savepoints.
	c.begin(conn)
	c.exec(conn, "SAVEPOINT x")
	c.exec(conn, "INSERT INTO t VALUES (7)")
	c.commit(conn)
	if conn.InTransaction() {
		c.errorf("Commit with a savepoint open left a transaction open")
	}
	if got := rows(); !slices.Equal(got, []int64{1, 3, 6, 7}) {
		c.errorf("rows %v, want [1 3 6 7]", got)
	}
}

func casePageSizeCount(c *checkT) {
	conn := c.open(c.path("sizes.db"), false)
	ps := c.pageSize(conn)
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		c.fatalf("PageSize %d: not a power of two in [512, 65536]", ps)
	}
	if got := c.queryOne(conn, "PRAGMA page_size"); got != int64(ps) {
		c.errorf("PageSize %d, PRAGMA page_size %v", ps, got)
	}
	c.exec(conn, "CREATE TABLE t(b BLOB)")
	before := c.pageCount(conn)
	for range 20 {
		c.exec(conn, "INSERT INTO t VALUES (?)", make([]byte, ps))
	}
	after := c.pageCount(conn)
	if after < before+20 {
		c.errorf("PageCount %d after inserting 20 page-sized blobs, was %d: want it to grow by at least 20", after, before)
	}
	if got := c.queryOne(conn, "PRAGMA page_count"); got != after {
		c.errorf("PageCount %d, PRAGMA page_count %v", after, got)
	}
	img := c.serialize(conn)
	if err := checkHeader(img, ps, after); err != nil {
		c.errorf("Serialize: %v", err)
	}
	// Inside a transaction the sizes include uncommitted work.
	c.begin(conn)
	c.exec(conn, "INSERT INTO t VALUES (?)", make([]byte, 4*ps))
	if n := c.pageCount(conn); n <= after {
		c.errorf("PageCount inside a transaction that grew the database: %d, want more than %d", n, after)
	}
	c.rollback(conn)
	if n := c.pageCount(conn); n != after {
		c.errorf("PageCount after Rollback: %d, want %d", n, after)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var se *driver.SQLiteError
	if errors.As(err, &se) {
		return se.Code == driver.CodeBusy || se.Code == 6 // SQLITE_LOCKED
	}
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked") || strings.Contains(msg, "busy")
}

// isCancel reports whether err says the statement stopped because its
// context ended (the context's own error, or SQLite's interrupt).
func isCancel(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se *driver.SQLiteError
	if errors.As(err, &se) && se.Code == driver.CodeInterrupt {
		return true
	}
	return strings.Contains(err.Error(), "interrupt")
}

func caseContext(c *checkT) {
	conn := c.open(c.path("ctx.db"), false)
	c.exec(conn, "CREATE TABLE t(x)")
	done, cancel := context.WithCancel(c.ctx)
	cancel()
	if _, err := conn.Exec(done, "INSERT INTO t VALUES (1)"); !errors.Is(err, context.Canceled) {
		c.errorf("Exec with a cancelled context: %v, want an error matching context.Canceled", err)
	}
	if rows, err := conn.Query(done, "SELECT 1"); !errors.Is(err, context.Canceled) {
		if err == nil {
			rows.Close()
		}
		c.errorf("Query with a cancelled context: %v, want an error matching context.Canceled", err)
	}
	if err := conn.Begin(done); !errors.Is(err, context.Canceled) {
		c.errorf("Begin with a cancelled context: %v, want an error matching context.Canceled", err)
	}
	if conn.InTransaction() {
		c.errorf("a transaction is open after Begin with a cancelled context")
		c.rollback(conn)
	}
	if got := c.queryOne(conn, "SELECT count(*) FROM t"); got != int64(0) {
		c.errorf("Exec with a cancelled context still wrote: %v rows", got)
	}
	if c.rec.Failed() {
		return // a driver that ignores a cancelled context would run the long statements below to the end
	}

	// Cancelling while rows stream stops the statement.
	const endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
	qctx, qcancel := context.WithCancel(c.ctx)
	rows, err := conn.Query(qctx, endless)
	if err != nil {
		qcancel()
		c.fatalf("Query: %v", err)
	}
	read := 0
	for rows.Next() {
		read++
		if read == 1000 {
			qcancel()
		}
		if read > 2_000_000 {
			break
		}
	}
	err = rows.Err()
	rows.Close()
	qcancel()
	if read > 2_000_000 {
		c.errorf("rows kept coming long after the query's context was cancelled")
	} else if !isCancel(err) {
		c.errorf("a query whose context was cancelled ended with %v, want the context's error or SQLite's interrupt", err)
	}

	// Cancelling a long Exec interrupts it.
	ectx, ecancel := context.WithCancel(c.ctx)
	// Twenty million rows take seconds in any SQLite build; the context
	// ends long before.
	timer := time.AfterFunc(10*time.Millisecond, ecancel)
	_, err = conn.Exec(ectx, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000000) SELECT count(*) FROM n")
	timer.Stop()
	ecancel()
	if !isCancel(err) {
		c.errorf("a long Exec whose context was cancelled ended with %v, want the context's error or SQLite's interrupt", err)
	}
	// The connection works afterwards, outside any transaction.
	if conn.InTransaction() {
		c.errorf("a transaction is open after cancelled statements")
	}
	c.exec(conn, "INSERT INTO t VALUES (2)")
	if got := c.queryOne(conn, "SELECT count(*) FROM t"); got != int64(1) {
		c.errorf("after cancellations the table holds %v rows, want 1", got)
	}
}

func caseClosed(c *checkT) {
	conn := c.open(c.path("closed.db"), false)
	c.exec(conn, "CREATE TABLE t(x)")
	c.close(conn)
	if _, err := conn.Exec(c.ctx, "INSERT INTO t VALUES (1)"); err == nil {
		c.errorf("Exec on a closed Conn succeeded")
	}
	if rows, err := conn.Query(c.ctx, "SELECT 1"); err == nil {
		rows.Close()
		c.errorf("Query on a closed Conn succeeded")
	}
	if _, err := conn.Serialize(c.ctx); err == nil {
		c.errorf("Serialize on a closed Conn succeeded")
	}
	conn.Close() // a second Close may fail, but must not panic
}

func caseMemory(c *checkT) {
	a := c.open("", false)
	b := c.open("", false)
	c.exec(a, "CREATE TABLE t(x); INSERT INTO t VALUES ('a')")
	if _, err := b.Query(c.ctx, "SELECT * FROM t"); err == nil {
		c.errorf("a table created in one in-memory database is visible in another: Path \"\" must open a private database")
	}
	c.exec(b, "CREATE TABLE t(x); INSERT INTO t VALUES ('b1'), ('b2')")
	img := c.serialize(a)
	if err := checkHeader(img, c.pageSize(a), c.pageCount(a)); err != nil {
		c.errorf("Serialize of an in-memory database: %v", err)
	}
	c.restore(b, img)
	if got := c.query(b, "SELECT x FROM t"); len(got) != 1 || got[0][0] != "a" {
		c.errorf("an in-memory database after Restore holds %v, want [[a]]", got)
	}
	if again := c.serialize(b); !bytes.Equal(again, img) {
		c.errorf("Serialize after Restore of an in-memory database differs: %s", describeDiff(again, img))
	}
}

// sameValue compares storage-class values exactly, telling a zero-length
// blob from NULL.
func sameValue(got, want any) bool {
	switch w := want.(type) {
	case []byte:
		g, ok := got.([]byte)
		return ok && g != nil && bytes.Equal(g, w)
	case float64:
		g, ok := got.(float64)
		return ok && (g == w || (math.IsNaN(g) && math.IsNaN(w)))
	default:
		return got == want
	}
}

func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case []byte:
		if x == nil {
			return "[]byte(nil)"
		}
		if len(x) > 16 {
			return fmt.Sprintf("[]byte(%d bytes)", len(x))
		}
		return fmt.Sprintf("[]byte(%x)", x)
	case string:
		return fmt.Sprintf("%q", clip(x))
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func asBytes(v any) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return nil
}
