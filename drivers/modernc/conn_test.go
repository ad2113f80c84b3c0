package modernc

import (
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	sqlite3 "modernc.org/sqlite/lib"
)

func TestSecondConnectionToAFileIsRefused(t *testing.T) {
	c := openT(t, "db", false)
	mustExec(t, c, "CREATE TABLE t(v)")
	_, err := New(Options{}).Open(context.Background(), driver.Config{Path: c.path})
	var se *driver.SQLiteError
	if !errors.As(err, &se) || se.Code != driver.CodeBusy {
		t.Fatalf("a second Open of a file in use = %v, want SQLITE_BUSY", err)
	}
	if _, err := os.Stat(c.path + "-shm"); !os.IsNotExist(err) {
		t.Errorf("a -shm file exists (%v); with exclusive locking the WAL index lives in memory", err)
	}
}

func TestBindAndReadStorageClasses(t *testing.T) {
	c := openT(t, "", false)
	mustExec(t, c, "CREATE TABLE t(n, v)")
	s := "a\x00b" // text with a NUL byte keeps its length
	in := []struct {
		name string
		arg  any
		want any
		typ  string
	}{
		{"nil", nil, nil, "null"},
		{"int64", int64(math.MinInt64), int64(math.MinInt64), "integer"},
		{"int", 42, int64(42), "integer"},
		{"bool", true, int64(1), "integer"},
		{"float", 1.25, 1.25, "real"},
		{"string", "héllo", "héllo", "text"},
		{"empty string", "", "", "text"},
		{"string with NUL", s, s, "text"},
		{"blob", []byte{0, 1, 2}, []byte{0, 1, 2}, "blob"},
		{"empty blob", []byte{}, []byte{}, "blob"},
		{"nil blob", []byte(nil), nil, "null"},
		{"*string nil", (*string)(nil), nil, "null"},
	}
	for _, tc := range in {
		mustExec(t, c, "INSERT INTO t VALUES (?, ?)", tc.name, tc.arg)
	}
	for _, tc := range in {
		got := queryAll(t, c, "SELECT v, typeof(v) FROM t WHERE n = ?", tc.name)
		if len(got) != 1 || !reflect.DeepEqual(got[0][0], tc.want) || got[0][1] != tc.typ {
			t.Errorf("%s: read back %#v, want %#v (%s)", tc.name, got, tc.want, tc.typ)
		}
	}
	if _, err := c.Exec(context.Background(), "INSERT INTO t VALUES (?, ?)", "bad", struct{}{}); !errors.Is(err, ErrArgumentType) {
		t.Errorf("an unsupported argument type gave %v, want ErrArgumentType", err)
	}
	if got := queryAll(t, c, "SELECT count(*) FROM t WHERE n = 'bad'")[0][0]; got != int64(0) {
		t.Error("a statement with an unsupported argument ran")
	}
}

func TestArgumentsMustMatchParameters(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "", false)
	mustExec(t, c, "CREATE TABLE t(a, b)")
	for _, tc := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO t VALUES (?, ?)", []any{1}},
		{"INSERT INTO t VALUES (?, ?)", []any{1, 2, 3}},
		{"INSERT INTO t VALUES (1, 2)", []any{1}},
		{"DELETE FROM t; INSERT INTO t VALUES (?, ?); INSERT INTO t VALUES (?, 0)", []any{1, 2}},
	} {
		if _, err := c.Exec(ctx, tc.sql, tc.args...); !errors.Is(err, ErrArguments) {
			t.Errorf("Exec(%q, %v) = %v, want ErrArguments", tc.sql, tc.args, err)
		}
	}
	if got := queryAll(t, c, "SELECT count(*) FROM t WHERE b = 0")[0][0]; got != int64(0) {
		t.Error("the statement after the one that took the arguments ran with unbound parameters")
	}
	if _, err := c.Query(ctx, "SELECT ?", 1, 2); !errors.Is(err, ErrArguments) {
		t.Errorf("Query with too many arguments = %v", err)
	}
}

func TestQueryTakesOneStatement(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "", false)
	if _, err := c.Query(ctx, "SELECT 1; SELECT 2"); !errors.Is(err, ErrMultipleStatements) {
		t.Errorf("Query of two statements = %v, want ErrMultipleStatements", err)
	}
	if got := queryAll(t, c, "SELECT 1; -- a comment\n ;"); len(got) != 1 {
		t.Errorf("a trailing comment: %v", got)
	}
	if got := queryAll(t, c, " -- nothing "); len(got) != 0 {
		t.Errorf("SQL without a statement returned %v", got)
	}
}

func TestCachedStatementsFollowTheAuthorizer(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	mustExec(t, c, "CREATE TABLE secret(v); INSERT INTO secret VALUES (1)")
	queryAll(t, c, "SELECT v FROM secret") // now cached
	denySecret := func(a driver.Action, arg1, _, _, _ string) driver.AuthResult {
		if a == driver.ActionRead && arg1 == "secret" {
			return driver.AuthDeny
		}
		return driver.AuthOK
	}
	if err := c.SetAuthorizer(denySecret); err != nil {
		t.Fatal(err)
	}
	_, err := c.Query(ctx, "SELECT v FROM secret")
	var se *driver.SQLiteError
	if !errors.Is(err, driver.ErrNotAuthorized) || !errors.As(err, &se) || !strings.Contains(se.Msg, "prohibited") {
		t.Fatalf("a cached statement ran past a new authorizer: %v", err)
	}
	// The driver's own statements of the same text are not the caller's.
	if _, err := c.PageCount(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "PRAGMA page_count"); err != nil {
		t.Fatal(err)
	}
	denyPragma := func(a driver.Action, _, _, _, _ string) driver.AuthResult {
		if a == driver.ActionPragma {
			return driver.AuthDeny
		}
		return driver.AuthOK
	}
	if err := c.SetAuthorizer(denyPragma); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PageCount(ctx); err != nil {
		t.Errorf("PageCount under a pragma-denying authorizer: %v", err)
	}
	if _, err := c.Exec(ctx, "PRAGMA page_count"); !errors.Is(err, driver.ErrNotAuthorized) {
		t.Errorf("the caller's PRAGMA reused the driver's authorized statement: %v", err)
	}
	if err := c.SetAuthorizer(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "PRAGMA page_count"); err != nil {
		t.Errorf("after removing the authorizer: %v", err)
	}
}

func TestTransactionsAreTheDriversOwn(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	mustExec(t, c, "CREATE TABLE t(v)")
	noTx := func(a driver.Action, _, _, _, _ string) driver.AuthResult {
		if a == driver.ActionTransaction {
			return driver.AuthDeny
		}
		return driver.AuthOK
	}
	if err := c.SetAuthorizer(noTx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "BEGIN"); !errors.Is(err, driver.ErrNotAuthorized) {
		t.Errorf("the caller's BEGIN = %v, want a denial", err)
	}
	if err := c.Begin(ctx); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	mustExec(t, c, "INSERT INTO t VALUES (1)")
	if err := c.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func TestBeginTakesTheWriteLock(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	if err := c.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	// BEGIN IMMEDIATE holds a write transaction at once; a deferred BEGIN
	// would report none until the first write.
	if st := sqlite3.Xsqlite3_txn_state(c.tls, c.db, c.zMain); st != sqlite3.SQLITE_TXN_WRITE {
		t.Fatalf("after Begin the transaction state is %d, want SQLITE_TXN_WRITE", st)
	}
	if err := c.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if c.InTransaction() {
		t.Fatal("still in a transaction after Rollback")
	}
	if err := c.Rollback(ctx); err != nil {
		t.Fatalf("Rollback without a transaction: %v", err)
	}
}

func TestAuthorizerPanicReachesTheCaller(t *testing.T) {
	c := openT(t, "", false)
	if err := c.SetAuthorizer(func(driver.Action, string, string, string, string) driver.AuthResult {
		panic("policy bug")
	}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "policy bug" {
				t.Fatalf("recovered %v, want the authorizer's panic", r)
			}
		}()
		c.Exec(context.Background(), "SELECT 1")
		t.Fatal("Exec returned instead of panicking")
	}()
	if err := c.SetAuthorizer(nil); err != nil {
		t.Fatal(err)
	}
	if got := queryAll(t, c, "SELECT 1"); len(got) != 1 {
		t.Fatal("the connection is unusable after the panic")
	}
}

func TestContextInterruptsAndDoesNotLinger(t *testing.T) {
	c := openT(t, "db", false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	const endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT count(*) FROM n"
	_, err := c.Exec(ctx, endless)
	var se *driver.SQLiteError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &se) || se.Code != driver.CodeInterrupt {
		t.Fatalf("Exec under an expiring context = %v, want DeadlineExceeded and SQLITE_INTERRUPT", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	r, err := c.Query(ctx2, endless)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel2)
	if r.Next() {
		t.Fatal("the endless query returned a row")
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("Rows.Err = %v, want context.Canceled", r.Err())
	}
	r.Close()
	// Nothing of the interrupt reaches the next statement.
	if got := queryAll(t, c, "SELECT 1"); len(got) != 1 {
		t.Fatal("a statement after the interrupted one failed")
	}
	if _, err := c.Exec(ctx2, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec with a context already done = %v", err)
	}
	// Rollback still runs with a context that is done: it is the clean-up.
	if err := c.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Rollback(ctx2); err != nil || c.InTransaction() {
		t.Fatalf("Rollback with a cancelled context = %v (in transaction: %v)", err, c.InTransaction())
	}
}

func TestClosedConnection(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", true)
	r, err := c.Query(ctx, "SELECT 1 UNION ALL SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if r.Next() || !errors.Is(r.Err(), ErrClosed) {
		t.Errorf("Rows of a closed connection: Next went on or Err = %v", r.Err())
	}
	checks := map[string]error{
		"Exec":          func() error { _, err := c.Exec(ctx, "SELECT 1"); return err }(),
		"Query":         func() error { _, err := c.Query(ctx, "SELECT 1"); return err }(),
		"Begin":         c.Begin(ctx),
		"Rollback":      c.Rollback(ctx),
		"Serialize":     func() error { _, err := c.Serialize(ctx); return err }(),
		"Restore":       c.Restore(ctx, nil),
		"SetAuthorizer": c.SetAuthorizer(nil),
		"TakeCommits":   func() error { _, err := (&CapturingConn{c}).TakeCommits(ctx); return err }(),
		"Checkpoint":    c.Checkpoint(ctx, driver.CheckpointPassive),
		"StartSession":  func() error { _, err := c.StartSession(ctx); return err }(),
	}
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed connection = %v, want ErrClosed", name, err)
		}
	}
	if c.InTransaction() {
		t.Error("a closed connection reports a transaction")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	_, err := New(Options{Synchronous: "sometimes"}).Open(context.Background(), driver.Config{})
	if err == nil {
		t.Fatal("an invalid Synchronous option was accepted")
	}
	c := openWith(t, Options{Synchronous: "normal"}, "db", false)
	if got := queryAll(t, c, "PRAGMA synchronous")[0][0]; got != int64(1) {
		t.Errorf("synchronous = %v, want 1 (NORMAL)", got)
	}
	c = openT(t, "db", false)
	if got := queryAll(t, c, "PRAGMA synchronous")[0][0]; got != int64(2) {
		t.Errorf("default synchronous = %v, want 2 (FULL)", got)
	}
	if got := queryAll(t, c, "PRAGMA journal_mode")[0][0]; got != "wal" {
		t.Errorf("journal_mode = %v, want wal", got)
	}
}

// TestCachedSelectStarSeesAddedColumn: a cached statement recompiled after
// ALTER TABLE ADD COLUMN returns the new column, not the old shape.
func TestCachedSelectStarSeesAddedColumn(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	all := func() ([]string, [][]any) {
		rows, err := c.Query(ctx, "SELECT * FROM t")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out [][]any
		for rows.Next() {
			out = append(out, append([]any(nil), rows.Values()...))
		}
		return rows.Columns(), out
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 2)"); err != nil {
		t.Fatal(err)
	}
	all()
	if _, err := c.Exec(ctx, "ALTER TABLE t ADD COLUMN c DEFAULT 5"); err != nil {
		t.Fatal(err)
	}
	cols, rows := all()
	if len(cols) != 3 || len(rows) != 1 || len(rows[0]) != 3 || rows[0][2] != int64(5) {
		t.Fatalf("columns %v rows %v, want a, b, c = 1, 2, 5", cols, rows)
	}
}
