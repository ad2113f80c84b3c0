package wasm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
)

func openTest(t *testing.T, path string, capture bool, opts ...Option) *Conn {
	t.Helper()
	c, err := New(opts...).Open(t.Context(), driver.Config{Path: path, PageCapture: capture})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*Conn)
}

func mustExec(t *testing.T, c driver.Conn, sql string, args ...any) driver.Result {
	t.Helper()
	r, err := c.Exec(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("Exec(%s): %v", sql, err)
	}
	return r
}

func queryRows(t *testing.T, c driver.Conn, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := c.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("Query(%s): %v", sql, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		var row []any
		for _, v := range rows.Values() {
			if b, ok := v.([]byte); ok {
				v = append([]byte{}, b...)
			}
			row = append(row, v)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("Query(%s): %v", sql, err)
	}
	return out
}

// withWALVerify makes WAL capture check its kept frames against the log.
func withWALVerify() Option { return func(d *Driver) { d.verifyWAL = true } }

// dbKind is one way the driver can hold a database.
type dbKind struct {
	name string
	path string // empty: in memory
	opts []Option
}

func (k dbKind) wal() bool { return k.path != "" && New(k.opts...).journal == JournalWAL }

func (k dbKind) open(t *testing.T, capture bool, opts ...Option) *Conn {
	t.Helper()
	return openTest(t, k.path, capture, append(append([]Option{}, k.opts...), opts...)...)
}

// eachKind runs fn on a file in rollback-journal mode, a file in WAL mode
// and an in-memory database.
func eachKind(t *testing.T, fn func(t *testing.T, k dbKind)) {
	for _, k := range []dbKind{
		{name: "file"},
		{name: "file-wal", opts: []Option{WithJournalMode(JournalWAL), withWALVerify()}},
		{name: "memory"},
	} {
		t.Run(k.name, func(t *testing.T) {
			if k.name != "memory" {
				k.path = filepath.Join(t.TempDir(), "db.sqlite")
			}
			fn(t, k)
		})
	}
}

func TestExecQueryValues(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		c := k.open(t, false)
		mustExec(t, c, "CREATE TABLE t(a, b, c, d, e); CREATE TABLE u(x)")
		r := mustExec(t, c, "INSERT INTO t VALUES (?, ?, ?, ?, ?)", 7, 2.5, "text", []byte{1, 2}, nil)
		if r.RowsAffected != 1 || r.LastInsertID != 1 {
			t.Fatalf("result %+v, want 1 row, id 1", r)
		}
		mustExec(t, c, "INSERT INTO t VALUES (true, ?, '', zeroblob(0), NULL)", float32(1.5))
		got := queryRows(t, c, "SELECT a, b, c, d, e FROM t ORDER BY rowid")
		want := [][]any{
			{int64(7), 2.5, "text", []byte{1, 2}, nil},
			{int64(1), 1.5, "", []byte{}, nil},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("rows %#v, want %#v", got, want)
		}
		// DDL after DML reports no rows affected.
		if r := mustExec(t, c, "CREATE TABLE v(y)"); r.RowsAffected != 0 {
			t.Fatalf("CREATE TABLE reported %d rows affected", r.RowsAffected)
		}
	})
}

func TestExecArguments(t *testing.T) {
	c := openTest(t, "", false)
	mustExec(t, c, "CREATE TABLE t(x)")
	// Arguments go to the first statement with parameters.
	mustExec(t, c, "CREATE TABLE u(y); INSERT INTO t VALUES (?); INSERT INTO u VALUES (1)", 5)
	if got := queryRows(t, c, "SELECT x FROM t"); !reflect.DeepEqual(got, [][]any{{int64(5)}}) {
		t.Fatalf("t holds %v", got)
	}
	cases := []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO t VALUES (?)", nil},
		{"INSERT INTO t VALUES (?)", []any{1, 2}},
		{"INSERT INTO t VALUES (1)", []any{1}},
		{"INSERT INTO t VALUES (?); INSERT INTO t VALUES (?)", []any{1}},
		{"INSERT INTO t VALUES (?)", []any{struct{}{}}},
	}
	for _, tc := range cases {
		if _, err := c.Exec(t.Context(), tc.sql, tc.args...); !errors.Is(err, ErrArguments) {
			t.Errorf("Exec(%q, %v) = %v, want ErrArguments", tc.sql, tc.args, err)
		}
	}
}

func TestQueryRefusesSeveralStatements(t *testing.T) {
	c := openTest(t, "", false)
	if _, err := c.Query(t.Context(), "SELECT 1; SELECT 2"); err == nil {
		t.Fatal("Query ran two statements")
	}
	if got := queryRows(t, c, "SELECT 1; -- trailing comment"); len(got) != 1 {
		t.Fatalf("rows %v", got)
	}
}

func TestSQLiteErrors(t *testing.T) {
	c := openTest(t, "", false)
	mustExec(t, c, "CREATE TABLE t(id INTEGER PRIMARY KEY)")
	mustExec(t, c, "INSERT INTO t VALUES (1)")
	_, err := c.Exec(t.Context(), "INSERT INTO t VALUES (1)")
	var se *driver.SQLiteError
	if !errors.As(err, &se) || se.Code != driver.CodeConstraint || se.ExtendedCode != 1555 {
		t.Fatalf("duplicate key: %v (%#v), want SQLITE_CONSTRAINT_PRIMARYKEY", err, se)
	}
	if se.Msg != "UNIQUE constraint failed: t.id" {
		t.Fatalf("message %q", se.Msg)
	}
	_, err = c.Exec(t.Context(), "SELEC 1")
	if !errors.As(err, &se) || se.Code != driver.CodeError {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestTransactions(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		c := k.open(t, false)
		mustExec(t, c, "CREATE TABLE t(x)")
		if err := c.Commit(ctx); !errors.Is(err, ErrNoTransaction) {
			t.Fatalf("Commit outside a transaction: %v", err)
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatalf("Rollback outside a transaction: %v", err)
		}
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if !c.InTransaction() {
			t.Fatal("InTransaction false after Begin")
		}
		if err := c.Begin(ctx); !errors.Is(err, ErrInTransaction) {
			t.Fatalf("nested Begin: %v", err)
		}
		mustExec(t, c, "INSERT INTO t VALUES (1)")
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if c.InTransaction() {
			t.Fatal("InTransaction true after Rollback")
		}
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "INSERT INTO t VALUES (2)")
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := queryRows(t, c, "SELECT x FROM t"); !reflect.DeepEqual(got, [][]any{{int64(2)}}) {
			t.Fatalf("t holds %v", got)
		}
	})
}

func TestTransactionControlBypassesAuthorizer(t *testing.T) {
	ctx := t.Context()
	c := openTest(t, "", false)
	mustExec(t, c, "CREATE TABLE t(x)")
	var seen []driver.Action
	c.SetAuthorizer(func(a driver.Action, arg1, arg2, db, trigger string) driver.AuthResult {
		seen = append(seen, a)
		if a == driver.ActionTransaction || a == driver.ActionPragma {
			return driver.AuthDeny
		}
		return driver.AuthOK
	})
	if _, err := c.Exec(ctx, "BEGIN"); !errors.Is(err, driver.ErrNotAuthorized) {
		t.Fatalf("user BEGIN: %v, want ErrNotAuthorized", err)
	}
	if err := c.Begin(ctx); err != nil {
		t.Fatalf("driver Begin under a denying authorizer: %v", err)
	}
	mustExec(t, c, "INSERT INTO t VALUES (1)")
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PageCount(ctx); err != nil {
		t.Fatalf("PageCount under a denying authorizer: %v", err)
	}
	if _, err := c.Serialize(ctx); err != nil {
		t.Fatalf("Serialize under a denying authorizer: %v", err)
	}
	if !slicesContains(seen, driver.ActionInsert) {
		t.Fatalf("the authorizer never saw the INSERT: %v", seen)
	}
}

func slicesContains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestContextInterrupts(t *testing.T) {
	c := openTest(t, "", false)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Exec(ctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec with a cancelled ctx: %v", err)
	}
	// A long query stops when its context ends, and the connection is
	// usable afterwards.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	rows, err := c.Query(ctx, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT i FROM n")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; rows.Next(); i++ {
		if i == 1000 {
			cancel()
		}
	}
	if err := rows.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("rows ended with %v, want context.Canceled", err)
	}
	rows.Close()
	if got := queryRows(t, c, "SELECT 1"); len(got) != 1 {
		t.Fatal("the connection is unusable after an interrupt")
	}
	_, err = c.Exec(interruptAfter(t), "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT count(*) FROM n")
	var se *driver.SQLiteError
	if !errors.As(err, &se) || se.Code != driver.CodeInterrupt || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Exec: %v, want SQLITE_INTERRUPT and context.Canceled", err)
	}
}

// interruptAfter returns a context cancelled shortly after the statement
// starts.
func interruptAfter(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// A busy loop would be racy in a test; a timer is enough, the
		// query runs forever.
		<-time.After(50 * time.Millisecond)
		cancel()
	}()
	return ctx
}

func TestCloseClosesRows(t *testing.T) {
	c := openTest(t, "", false)
	rows, err := c.Query(t.Context(), "SELECT 1 UNION ALL SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if err := c.Close(); err != nil {
		t.Fatalf("Close with open rows: %v", err)
	}
	if rows.Next() {
		t.Fatal("rows continued after Close")
	}
	if _, err := c.Exec(t.Context(), "SELECT 1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Exec after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Connections share nothing but the process-wide VFS registration: many
// opened and used at once, file and in-memory, with capture, stay correct
// (run with -race).
func TestConcurrentConnections(t *testing.T) {
	d := New()
	dir := t.TempDir()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			errs <- func() error {
				path := ""
				if i%2 == 0 {
					path = filepath.Join(dir, fmt.Sprint(i, ".db"))
				}
				c, err := d.Open(t.Context(), driver.Config{Path: path, PageCapture: true})
				if err != nil {
					return err
				}
				defer c.Close()
				pc := c.(driver.PageCapturer)
				if _, err := c.Exec(t.Context(), "CREATE TABLE t(v)"); err != nil {
					return err
				}
				for j := range 20 {
					if _, err := c.Exec(t.Context(), "INSERT INTO t VALUES (?)", j); err != nil {
						return err
					}
				}
				commits, err := pc.TakeCommits(t.Context())
				if err != nil {
					return err
				}
				if len(commits) != 21 {
					return fmt.Errorf("connection %d: %d commits, want 21", i, len(commits))
				}
				return nil
			}()
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
