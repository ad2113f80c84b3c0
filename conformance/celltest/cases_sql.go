package celltest

import (
	"context"
	"errors"
	"strings"

	"github.com/cellb/cellb/core/cell"
)

func sqlCases() []caseDef {
	return []caseDef{
		{"sql/exec-query-scan", caseExecQueryScan},
		{"sql/savepoints", caseSavepoints},
		{"sql/authorizer", caseAuthorizer},
		{"sql/reserved-rename", caseReservedRename},
		{"sql/celld-schema", caseCelldSchema},
	}
}

func caseExecQueryScan(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "SQL", nil)
	s := pc.stub("a")
	var leaked *cell.Rows
	must(c, s, "exec and query", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		if _, err := sql.Exec(ctx, "CREATE TABLE kinds(i INTEGER, f REAL, s TEXT, b BLOB, n)"); err != nil {
			return 0, err
		}
		res, err := sql.Exec(ctx, "INSERT INTO kinds VALUES(?, ?, ?, ?, ?)", 42, 2.5, "héllo", []byte{0, 1, 2}, nil)
		if err != nil {
			return 0, err
		}
		if res.RowsAffected != 1 {
			c.errorf("RowsAffected = %d, want 1", res.RowsAffected)
		}
		var (
			i   int64
			f   float64
			str string
			b   []byte
			n   *string
		)
		if err := sql.QueryRow(ctx, "SELECT i, f, s, b, n FROM kinds").Scan(&i, &f, &str, &b, &n); err != nil {
			return 0, err
		}
		if i != 42 || f != 2.5 || str != "héllo" || string(b) != "\x00\x01\x02" || n != nil {
			c.errorf("scanned (%d, %v, %q, %v, %v), want (42, 2.5, héllo, [0 1 2], nil)", i, f, str, b, n)
		}
		if err := sql.QueryRow(ctx, "SELECT i FROM kinds WHERE i = ?", -1).Scan(&i); !errors.Is(err, cell.ErrNoRows) {
			c.errorf("QueryRow with no row: %v, want ErrNoRows", err)
		}
		rows, err := sql.Query(ctx, "SELECT value FROM json_each('[1,2,3]')")
		if err != nil {
			return 0, err
		}
		var sum int64
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				return 0, err
			}
			sum += v
		}
		if err := rows.Err(); err != nil || sum != 6 {
			c.errorf("iterating rows: sum %d, err %v; want 6, nil", sum, err)
		}
		rows.Close()
		if size, err := sql.DatabaseSize(ctx); err != nil || size <= 0 {
			c.errorf("DatabaseSize = %d, %v; want a positive size", size, err)
		}
		leaked, err = sql.Query(ctx, "SELECT 1")
		return 0, err
	})
	must(c, s, "rows after their turn", func(ctx context.Context, p *probe) (int, error) {
		if leaked.Next() || !errors.Is(leaked.Err(), cell.ErrRowsClosed) {
			c.errorf("rows from an ended turn still iterate (err %v), want ErrRowsClosed", leaked.Err())
		}
		return 0, nil
	})
}

func caseSavepoints(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Savepoint", nil)
	s := pc.stub("a")
	errInner := errors.New("inner failed")
	must(c, s, "nested transactions", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		err := sql.Transaction(ctx, func(ctx context.Context) error {
			if _, err := sql.Exec(ctx, "INSERT INTO t VALUES('outer', 1)"); err != nil {
				return err
			}
			err := sql.Transaction(ctx, func(ctx context.Context) error {
				if _, err := sql.Exec(ctx, "INSERT INTO t VALUES('inner', 1)"); err != nil {
					return err
				}
				if err := p.st.KV().Put(ctx, "inner", true); err != nil {
					return err
				}
				return errInner
			})
			if !errors.Is(err, errInner) {
				c.errorf("a failed nested transaction returned %v, want its error", err)
			}
			_, yerr := cell.Await(ctx, func(ctx context.Context) (int, error) { return 0, nil })
			if yerr != nil {
				c.errorf("Await inside Transaction returned %v, want nil (it keeps the gate and the transaction)", yerr)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		err = sql.Transaction(ctx, func(ctx context.Context) error {
			if _, err := sql.Exec(ctx, "INSERT INTO t VALUES('failed', 1)"); err != nil {
				return err
			}
			return errInner
		})
		if !errors.Is(err, errInner) {
			c.errorf("a failed transaction returned %v, want its error", err)
		}
		_, err = sql.Exec(ctx, "INSERT INTO t VALUES('after', 1)")
		return 0, err
	})
	type state struct {
		keys  []string
		inner bool
	}
	st := must(c, s, "read back", func(ctx context.Context, p *probe) (state, error) {
		var out state
		rows, err := p.st.SQL().Query(ctx, "SELECT k FROM t ORDER BY k")
		if err != nil {
			return out, err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			rows.Scan(&k)
			out.keys = append(out.keys, k)
		}
		_, out.inner, err = p.st.KV().Get(ctx, "inner")
		return out, err
	})
	if strings.Join(st.keys, ",") != "after,outer" || st.inner {
		c.errorf("after the transactions t holds %v and KV inner=%v; want [after outer] and no inner key (rolled-back savepoints must leave nothing)", st.keys, st.inner)
	}
}

// deniedSQL are statements user code may not run, and what the error must
// name.
var deniedSQL = []struct{ sql, names string }{
	{"SELECT * FROM _cf_KV", "_cf_KV"},
	{"INSERT INTO _cf_ALARM(scope, at_ms) VALUES('x', 1)", "_cf_ALARM"},
	{"DELETE FROM _cf_METADATA", "_cf_METADATA"},
	{"CREATE TABLE _litestream_seq(id INTEGER PRIMARY KEY, seq INTEGER)", "_litestream_seq"},
	{"ATTACH DATABASE ':memory:' AS other", "ATTACH"},
	{"SELECT load_extension('x')", "load_extension"},
	{"BEGIN", "TRANSACTION"},
	{"COMMIT", "TRANSACTION"},
	{"SAVEPOINT mine", "SAVEPOINT"},
	{"PRAGMA journal_mode=DELETE", "journal_mode"},
	{"PRAGMA synchronous=OFF", "synchronous"},
	{"PRAGMA locking_mode=EXCLUSIVE", "locking_mode"},
	{"PRAGMA wal_autocheckpoint=0", "wal_autocheckpoint"},
	{"PRAGMA writable_schema=ON", "writable_schema"},
}

var allowedSQL = []string{
	"PRAGMA table_info(t)",
	"PRAGMA foreign_keys=ON",
	"PRAGMA user_version",
	"SELECT count(*) FROM t",
	"CREATE INDEX IF NOT EXISTS t_v ON t(v)",
}

func caseAuthorizer(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Auth", nil)
	s := pc.stub("a")
	must(c, s, "authorizer", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		for _, d := range deniedSQL {
			_, err := sql.Exec(ctx, d.sql)
			var de *cell.DeniedError
			switch {
			case err == nil:
				c.errorf("%q was allowed; user SQL may not run it", d.sql)
			case d.names == "load_extension" && !errors.As(err, &de) && strings.Contains(err.Error(), "no such function"):
				// This SQLite build has no extension loading at all.
			case !errors.As(err, &de):
				c.errorf("%q failed with %v, want a *cell.DeniedError", d.sql, err)
			case !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(d.names)):
				c.errorf("the denial of %q says %q, which does not name %s", d.sql, err, d.names)
			}
		}
		for _, q := range allowedSQL {
			if _, err := sql.Exec(ctx, q); err != nil {
				c.errorf("%q was refused: %v", q, err)
			}
		}
		// The runtime's own statements still pass.
		if err := p.st.KV().Put(ctx, "k", "v"); err != nil {
			c.errorf("KV Put under the authorizer: %v", err)
		}
		return 0, nil
	})
}

// ALTER TABLE ... RENAME TO a reserved name is denied like any other
// access to celld's and the replicator's tables, however the new name is
// written; renames to other names, and reserved-looking words inside
// string literals or comments, pass.
func caseReservedRename(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Rename", nil)
	s := pc.stub("a")
	must(c, s, "renames", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		if _, err := sql.Exec(ctx, "CREATE TABLE r1(x)"); err != nil {
			return 0, err
		}
		for _, d := range []struct{ sql, name string }{
			{"ALTER TABLE r1 RENAME TO _cf_mine", "_cf_mine"},
			{"ALTER TABLE r1 RENAME TO _CF_KV2", "_CF_KV2"},
			{`ALTER TABLE "r1" RENAME TO "_cf_quoted"`, "_cf_quoted"},
			{"ALTER TABLE r1 RENAME TO [_cf_bracket]", "_cf_bracket"},
			{"ALTER TABLE r1 RENAME TO `_litestream_tick`", "_litestream_tick"},
			{"ALTER TABLE r1 RENAME TO '_cf_string'", "_cf_string"},
			{"ALTER TABLE main.r1 /* a comment */ RENAME -- another\n TO _cf_spaced", "_cf_spaced"},
			{"SELECT 1; ALTER TABLE r1 RENAME TO _cf_second", "_cf_second"},
		} {
			_, err := sql.Exec(ctx, d.sql)
			var de *cell.DeniedError
			switch {
			case err == nil:
				c.errorf("%q was allowed; user SQL may not rename a table to a reserved name", d.sql)
			case !errors.As(err, &de):
				c.errorf("%q failed with %v, want a *cell.DeniedError", d.sql, err)
			case !strings.Contains(err.Error(), d.name):
				c.errorf("the denial of %q says %q, which does not name %s", d.sql, err, d.name)
			}
		}
		var n int64
		if err := sql.QueryRow(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'r1'").Scan(&n); err != nil || n != 1 {
			c.errorf("after the refused renames table r1 is there %d times (err %v), want once", n, err)
		}
		for _, q := range []string{
			"ALTER TABLE r1 RENAME TO r2",
			"ALTER TABLE r2 ADD COLUMN note TEXT DEFAULT 'RENAME TO _cf_x'",
			"ALTER TABLE r2 RENAME x TO y /* RENAME TO _cf_y */",
		} {
			if _, err := sql.Exec(ctx, q); err != nil {
				c.errorf("%q was refused: %v", q, err)
			}
		}
		return 0, nil
	})
}

// The cell database holds celld's tables exactly, and the actor name.
func caseCelldSchema(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Schema", nil)
	s := pc.stub("my-name")
	must(c, s, "touch", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.KV().Put(ctx, "k", 1) })
	dir := rt.DataDir()
	if err := rt.Close(c.ctx); err != nil {
		c.fatalf("Close: %v", err)
	}
	conn := c.openRaw(dir, s.Key())
	want := map[string]string{
		"_cf_KV":       "CREATE TABLE _cf_KV(scope TEXT, k TEXT, v TEXT, PRIMARY KEY(scope,k))",
		"_cf_ALARM":    "CREATE TABLE _cf_ALARM(scope TEXT PRIMARY KEY, at_ms INTEGER, retry INTEGER DEFAULT 0, counted_retry INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0)",
		"_cf_METADATA": "CREATE TABLE _cf_METADATA(scope TEXT PRIMARY KEY, actor_name TEXT)",
	}
	for name, sql := range want {
		rows := c.rawRows(conn, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", name)
		if len(rows) != 1 || rows[0][0] != sql {
			c.errorf("table %s is %v, want %q", name, rows, sql)
		}
	}
	rows := c.rawRows(conn, "SELECT scope, actor_name FROM _cf_METADATA")
	if len(rows) != 1 || rows[0][0] != s.Key() || rows[0][1] != "my-name" {
		c.errorf("_cf_METADATA holds %v, want [[%s my-name]]", rows, s.Key())
	}
	rows = c.rawRows(conn, "SELECT scope, k, typeof(v), v FROM _cf_KV")
	if len(rows) != 1 || rows[0][0] != s.Key() || rows[0][1] != "k" || rows[0][2] != "text" || rows[0][3] != "1" {
		c.errorf("_cf_KV holds %v, want [[%s k text 1]] (scope = cell key, value as JSON text)", rows, s.Key())
	}
}
