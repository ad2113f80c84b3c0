package drivertest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// authCases check SetAuthorizer: SQLite's codes and arguments reach the
// callback unchanged, denials are recognisable, and the driver's own work
// is not blocked by a strict policy.
func authCases() []caseDef {
	return []caseDef{
		{"auth/arguments", caseAuthArguments},
		{"auth/deny-read", caseAuthDenyRead},
		{"auth/deny-attach", caseAuthDenyAttach},
		{"auth/deny-pragma", caseAuthDenyPragma},
		{"auth/ignore", caseAuthIgnore},
		{"auth/remove", caseAuthRemove},
		{"auth/driver-internals", caseAuthInternals},
		{"auth/survives-restore", caseAuthSurvivesRestore},
	}
}

// authCall is one invocation of an Authorizer.
type authCall struct {
	Action                  driver.Action
	Arg1, Arg2, DB, Trigger string
}

func (a authCall) String() string {
	return fmt.Sprintf("(%v, %q, %q, %q, %q)", a.Action, a.Arg1, a.Arg2, a.DB, a.Trigger)
}

// recorder is an Authorizer that records every call and answers with
// decide (AuthOK when nil).
type recorder struct {
	calls  []authCall
	decide func(authCall) driver.AuthResult
}

func (r *recorder) fn(action driver.Action, arg1, arg2, db, trigger string) driver.AuthResult {
	call := authCall{action, arg1, arg2, db, trigger}
	r.calls = append(r.calls, call)
	if r.decide != nil {
		return r.decide(call)
	}
	return driver.AuthOK
}

func (c *checkT) setAuth(conn driver.Conn, fn driver.Authorizer) {
	if err := conn.SetAuthorizer(fn); err != nil {
		c.fatalf("SetAuthorizer: %v", err)
	}
}

// expectDenied checks err is an authorizer denial carrying SQLite's message.
func (c *checkT) expectDenied(what string, err error, msg string) {
	switch {
	case err == nil:
		c.errorf("%s succeeded, but the authorizer denies it", what)
	case !errors.Is(err, driver.ErrNotAuthorized):
		c.errorf("%s: error %q does not match driver.ErrNotAuthorized (errors.Is)", what, err)
	case !strings.Contains(err.Error(), msg):
		c.errorf("%s: error %q does not carry SQLite's message %q", what, err, msg)
	}
}

// queryErr runs a query to the end and returns the first error, whether it
// came from preparing or from stepping.
func (c *checkT) queryErr(conn driver.Conn, sql string, args ...any) error {
	_, err := queryAll(c.ctx, conn, sql, args...)
	return err
}

func caseAuthArguments(c *checkT) {
	conn := c.open(c.path("auth-args.db"), false)
	c.exec(conn, `CREATE TABLE t(x); CREATE TABLE src(a); CREATE TABLE logt(a);
		CREATE TRIGGER tr AFTER INSERT ON src BEGIN INSERT INTO logt VALUES (new.a); END`)
	rec := &recorder{}
	c.setAuth(conn, rec.fn)
	steps := []struct {
		sql  string
		want []authCall
	}{
		{"SELECT x FROM t", []authCall{{driver.ActionSelect, "", "", "", ""}, {driver.ActionRead, "t", "x", "main", ""}}},
		{"INSERT INTO t(x) VALUES (1)", []authCall{{driver.ActionInsert, "t", "", "main", ""}}},
		{"UPDATE t SET x = 2", []authCall{{driver.ActionUpdate, "t", "x", "main", ""}}},
		{"DELETE FROM t", []authCall{{driver.ActionDelete, "t", "", "main", ""}}},
		{"SELECT upper('a')", []authCall{{driver.ActionFunction, "", "upper", "", ""}}},
		{"PRAGMA user_version = 5", []authCall{{driver.ActionPragma, "user_version", "5", "", ""}}},
		{"CREATE TABLE u(y)", []authCall{{driver.ActionCreateTable, "u", "", "main", ""}}},
		{"CREATE INDEX ix ON t(x)", []authCall{{driver.ActionCreateIndex, "ix", "t", "main", ""}}},
		{"DROP TABLE u", []authCall{{driver.ActionDropTable, "u", "", "main", ""}}},
		{"SAVEPOINT sp", []authCall{{driver.ActionSavepoint, "BEGIN", "sp", "", ""}}},
		{"RELEASE sp", []authCall{{driver.ActionSavepoint, "RELEASE", "sp", "", ""}}},
		{"INSERT INTO src VALUES (7)", []authCall{{driver.ActionInsert, "src", "", "main", ""}, {driver.ActionInsert, "logt", "", "main", "tr"}}},
		{"ATTACH DATABASE ':memory:' AS aux", []authCall{{driver.ActionAttach, ":memory:", "", "", ""}}},
		{"DETACH DATABASE aux", []authCall{{driver.ActionDetach, "aux", "", "", ""}}},
	}
	for _, s := range steps {
		rec.calls = nil
		if strings.HasPrefix(s.sql, "SELECT") {
			if err := c.queryErr(conn, s.sql); err != nil {
				c.errorf("%s with an allow-all authorizer: %v", s.sql, err)
				continue
			}
		} else if _, err := conn.Exec(c.ctx, s.sql); err != nil {
			c.errorf("%s with an allow-all authorizer: %v", s.sql, err)
			continue
		}
		for _, w := range s.want {
			if !slices.Contains(rec.calls, w) {
				c.errorf("%s: the authorizer never saw %v; it saw %v", s.sql, w, rec.calls)
			}
		}
	}
}

func caseAuthDenyRead(c *checkT) {
	conn := c.open(c.path("auth-read.db"), false)
	c.exec(conn, "CREATE TABLE secret(k, v); INSERT INTO secret VALUES (1, 'hidden'); CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	c.setAuth(conn, func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
		if a == driver.ActionRead && arg1 == "secret" {
			return driver.AuthDeny
		}
		return driver.AuthOK
	})
	c.expectDenied("SELECT v FROM secret", c.queryErr(conn, "SELECT v FROM secret"), "access to secret.v is prohibited")
	_, err := conn.Exec(c.ctx, "INSERT INTO t VALUES (2); SELECT v FROM secret")
	c.expectDenied("a denied read in the second statement of an Exec", err, "prohibited")
	if err := c.queryErr(conn, "SELECT x FROM t"); err != nil {
		c.errorf("reading an allowed table under the same authorizer: %v", err)
	}
}

func caseAuthDenyAttach(c *checkT) {
	conn := c.open(c.path("auth-attach.db"), false)
	c.setAuth(conn, func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
		if a == driver.ActionAttach {
			return driver.AuthDeny
		}
		return driver.AuthOK
	})
	_, err := conn.Exec(c.ctx, "ATTACH DATABASE ':memory:' AS aux")
	c.expectDenied("ATTACH", err, "not authorized")
	if err := c.queryErr(conn, "SELECT * FROM aux.sqlite_schema"); err == nil {
		c.errorf("a denied ATTACH still attached the database")
	}
	_, err = conn.Exec(c.ctx, "ATTACH DATABASE ? AS aux2", c.path("other.db"))
	c.expectDenied("ATTACH with a bound file name", err, "not authorized")
}

func caseAuthDenyPragma(c *checkT) {
	conn := c.open(c.path("auth-pragma.db"), false)
	c.setAuth(conn, func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
		if a == driver.ActionPragma {
			return driver.AuthDeny
		}
		return driver.AuthOK
	})
	_, err := conn.Exec(c.ctx, "PRAGMA user_version = 5")
	c.expectDenied("PRAGMA user_version = 5", err, "not authorized")
	c.expectDenied("PRAGMA journal_mode (query)", c.queryErr(conn, "PRAGMA journal_mode"), "not authorized")
	c.setAuth(conn, nil)
	if got := c.queryOne(conn, "PRAGMA user_version"); got != int64(0) {
		c.errorf("a denied PRAGMA still changed user_version to %v", got)
	}
}

func caseAuthIgnore(c *checkT) {
	conn := c.open(c.path("auth-ignore.db"), false)
	c.exec(conn, "CREATE TABLE secret(k, v); INSERT INTO secret VALUES (1, 'hidden'), (2, 'also')")
	c.setAuth(conn, func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
		if a == driver.ActionRead && arg1 == "secret" && arg2 == "v" {
			return driver.AuthIgnore
		}
		return driver.AuthOK
	})
	rows := c.query(conn, "SELECT k, v FROM secret ORDER BY k")
	if len(rows) != 2 || rows[0][0] != int64(1) || rows[0][1] != nil || rows[1][1] != nil {
		c.errorf("with SQLITE_IGNORE on secret.v, rows are %v, want [[1 <nil>] [2 <nil>]]", rows)
	}
}

func caseAuthRemove(c *checkT) {
	conn := c.open(c.path("auth-remove.db"), false)
	c.exec(conn, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	const q = "SELECT x FROM t"
	// Run the query once so a driver that caches prepared statements has
	// it cached: SQLite re-prepares (and re-authorizes) when the
	// authorizer changes, and the driver must not bypass that.
	c.query(conn, q)
	c.query(conn, q)
	c.setAuth(conn, func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
		if a == driver.ActionRead {
			return driver.AuthDeny
		}
		return driver.AuthOK
	})
	c.expectDenied("a previously run query after a denying authorizer was set", c.queryErr(conn, q), "prohibited")
	c.setAuth(conn, nil)
	if err := c.queryErr(conn, q); err != nil {
		c.errorf("after SetAuthorizer(nil) the query still fails: %v", err)
	}
	c.setAuth(conn, func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
		if a == driver.ActionInsert {
			return driver.AuthDeny
		}
		return driver.AuthOK
	})
	_, err := conn.Exec(c.ctx, "INSERT INTO t VALUES (2)")
	c.expectDenied("INSERT under a new authorizer", err, "not authorized")
	if err := c.queryErr(conn, q); err != nil {
		c.errorf("replacing the authorizer kept the old one's denial of reads: %v", err)
	}
}

// strictPolicy denies what CellB denies user SQL: pragmas and attaching.
func strictPolicy(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
	switch a {
	case driver.ActionPragma, driver.ActionAttach, driver.ActionDetach:
		return driver.AuthDeny
	}
	return driver.AuthOK
}

func caseAuthInternals(c *checkT) {
	capture := c.caps.PageCapture
	conn := c.open(c.path("auth-internals.db"), capture)
	c.exec(conn, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	base := c.serialize(conn)
	if capture {
		if pc, ok := conn.(driver.PageCapturer); ok {
			if _, err := pc.TakeCommits(c.ctx); err != nil {
				c.fatalf("TakeCommits: %v", err)
			}
			base = c.serialize(conn)
		}
	}
	c.setAuth(conn, strictPolicy)
	// The runtime calls these on a connection whose authorizer forbids
	// pragmas: the driver's own statements must not be subject to it.
	if _, err := conn.PageSize(c.ctx); err != nil {
		c.errorf("PageSize under an authorizer that denies pragmas: %v", err)
	}
	if _, err := conn.PageCount(c.ctx); err != nil {
		c.errorf("PageCount under an authorizer that denies pragmas: %v", err)
	}
	if err := conn.Begin(c.ctx); err != nil {
		c.fatalf("Begin under an authorizer that denies pragmas: %v", err)
	}
	c.exec(conn, "INSERT INTO t VALUES (2)")
	if err := conn.Commit(c.ctx); err != nil {
		c.errorf("Commit under an authorizer that denies pragmas: %v", err)
	}
	if err := conn.Begin(c.ctx); err == nil {
		if err := conn.Rollback(c.ctx); err != nil {
			c.errorf("Rollback under an authorizer that denies pragmas: %v", err)
		}
	}
	img, err := conn.Serialize(c.ctx)
	if err != nil {
		c.errorf("Serialize under an authorizer that denies pragmas: %v", err)
	}
	if capture {
		if pc, ok := conn.(driver.PageCapturer); ok {
			commits, err := pc.TakeCommits(c.ctx)
			if err != nil {
				c.errorf("TakeCommits under an authorizer that denies pragmas: %v", err)
			} else if img != nil {
				if err := verifyCommits(c.pageSize(conn), base, commits, nil, img); err != nil {
					c.errorf("page capture under an authorizer that denies pragmas: %v", err)
				}
			}
		}
	}
	if cp, ok := conn.(driver.Checkpointer); ok && c.caps.Checkpoint {
		if err := cp.Checkpoint(c.ctx, driver.CheckpointTruncate); err != nil {
			c.errorf("Checkpoint under an authorizer that denies pragmas: %v", err)
		}
	}
	if img != nil {
		if err := conn.Restore(c.ctx, img); err != nil {
			c.errorf("Restore under an authorizer that denies pragmas: %v", err)
		}
	}
	if got := c.queryOne(conn, "SELECT count(*) FROM t"); got != int64(2) {
		c.errorf("table holds %v rows, want 2", got)
	}
	_, err = conn.Exec(c.ctx, "PRAGMA user_version = 1")
	c.expectDenied("PRAGMA after the driver's own work", err, "not authorized")
}

func caseAuthSurvivesRestore(c *checkT) {
	src := c.open(c.path("auth-src.db"), false)
	c.exec(src, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	img := c.serialize(src)
	conn := c.open(c.path("auth-restore.db"), c.caps.PageCapture)
	c.setAuth(conn, strictPolicy)
	c.restore(conn, img)
	_, err := conn.Exec(c.ctx, "PRAGMA user_version = 1")
	c.expectDenied("PRAGMA after Restore", err, "not authorized")
	_, err = conn.Exec(c.ctx, "ATTACH DATABASE ':memory:' AS aux")
	c.expectDenied("ATTACH after Restore", err, "not authorized")
	if err := c.queryErr(conn, "SELECT x FROM t"); err != nil {
		c.errorf("reading the restored table: %v", err)
	}
}
