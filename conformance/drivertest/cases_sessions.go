package drivertest

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// sessionCases check the session extension: changesets recorded on one
// database reproduce its row changes on a copy, honour table filters, and
// refuse to apply over conflicting rows.
func sessionCases() []caseDef {
	return []caseDef{
		{"sessions/declared", caseSessionsDeclared},
		{"sessions/workload", caseSessionsWorkload},
		{"sessions/filter", caseSessionsFilter},
		{"sessions/conflict", caseSessionsConflict},
		{"sessions/triggers", caseSessionsTriggers},
	}
}

const sessionSchema = `
	CREATE TABLE s_kv(k INTEGER PRIMARY KEY, tag TEXT, v BLOB, f REAL);
	CREATE TABLE s_named(name TEXT PRIMARY KEY, val REAL, data BLOB);
	CREATE TABLE s_pair(a INTEGER, b TEXT, c, PRIMARY KEY (a, b));`

func caseSessionsDeclared(c *checkT) {
	conn := c.open(c.path("declared.db"), false)
	s, ok := conn.(driver.Sessioner)
	if c.caps.Sessions {
		if !ok {
			c.fatalf("the driver declares Sessions but its Conn does not implement driver.Sessioner")
		}
		sess, err := s.StartSession(c.ctx)
		if err != nil {
			c.fatalf("StartSession: %v", err)
		}
		sess.Close()
		return
	}
	if !ok {
		return
	}
	if sess, err := s.StartSession(c.ctx); !errors.Is(err, driver.ErrUnsupported) {
		if err == nil {
			sess.Close()
		}
		c.errorf("the driver does not declare Sessions, yet its Conn implements Sessioner and StartSession returns %v instead of driver.ErrUnsupported", err)
	}
	if err := s.ApplyChangeset(c.ctx, []byte{'T'}); !errors.Is(err, driver.ErrUnsupported) {
		c.errorf("the driver does not declare Sessions, yet ApplyChangeset returns %v instead of driver.ErrUnsupported", err)
	}
}

// sessionPair is a source database and a copy of it.
type sessionPair struct {
	c        *checkT
	src, dst driver.Conn
	srcS     driver.Sessioner
	dstS     driver.Sessioner
	next     int64
}

func newSessionPair(c *checkT) *sessionPair {
	if !c.caps.Sessions {
		c.skip("the driver does not declare Sessions")
	}
	p := &sessionPair{c: c}
	p.src = c.open(c.path("src.db"), false)
	c.exec(p.src, sessionSchema)
	p.dst = c.open(c.path("dst.db"), false)
	c.restore(p.dst, c.serialize(p.src))
	var ok1, ok2 bool
	p.srcS, ok1 = p.src.(driver.Sessioner)
	p.dstS, ok2 = p.dst.(driver.Sessioner)
	if !ok1 || !ok2 {
		c.fatalf("the driver declares Sessions but its Conn does not implement driver.Sessioner")
	}
	return p
}

func (p *sessionPair) start(tables ...string) driver.Session {
	s, err := p.srcS.StartSession(p.c.ctx, tables...)
	if err != nil {
		p.c.fatalf("StartSession(%q): %v", tables, err)
	}
	return s
}

func (p *sessionPair) changeset(s driver.Session) []byte {
	cs, err := s.Changeset()
	if err != nil {
		p.c.fatalf("Changeset: %v", err)
	}
	if err := s.Close(); err != nil {
		p.c.errorf("Session.Close: %v", err)
	}
	return cs
}

// randomChange makes one random row change (or a rolled-back one) on src.
func (p *sessionPair) randomChange() {
	c, r := p.c, p.c.rng
	keys := func(table, col string) []any {
		var out []any
		for _, row := range c.query(p.src, fmt.Sprintf("SELECT %s FROM %s ORDER BY 1", col, table)) {
			out = append(out, row[0])
		}
		return out
	}
	pickOne := func(vals []any) (any, bool) {
		if len(vals) == 0 {
			return nil, false
		}
		return vals[r.IntN(len(vals))], true
	}
	value := func() any {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return r.Int64()
		case 2:
			return r.Float64() * 1000
		case 3:
			return randTag(r)
		default:
			return randBytes(r, r.IntN(3000))
		}
	}
	p.next++
	switch r.IntN(12) {
	case 0, 1:
		c.exec(p.src, "INSERT INTO s_kv(k, tag, v, f) VALUES (?, ?, ?, ?)", p.next, randTag(r), randBytes(r, r.IntN(5000)), r.Float64())
	case 2:
		c.exec(p.src, "INSERT OR REPLACE INTO s_named VALUES (?, ?, ?)", randTag(r), r.Float64(), value())
	case 3:
		c.exec(p.src, "INSERT OR IGNORE INTO s_pair VALUES (?, ?, ?)", r.IntN(20), randTag(r)[:3], value())
	case 4:
		if k, ok := pickOne(keys("s_kv", "k")); ok {
			c.exec(p.src, "UPDATE s_kv SET tag = ?, v = ? WHERE k = ?", randTag(r), value(), k)
		}
	case 5:
		if k, ok := pickOne(keys("s_kv", "k")); ok {
			// Changing a primary key is a delete plus an insert.
			c.exec(p.src, "UPDATE OR IGNORE s_kv SET k = ? WHERE k = ?", p.next+1_000_000, k)
		}
	case 6:
		if n, ok := pickOne(keys("s_named", "name")); ok {
			c.exec(p.src, "UPDATE s_named SET val = ?, data = ? WHERE name = ?", value(), value(), n)
		}
	case 7:
		c.exec(p.src, "UPDATE s_pair SET c = ? WHERE a = ?", value(), r.IntN(20))
	case 8:
		if k, ok := pickOne(keys("s_kv", "k")); ok {
			c.exec(p.src, "DELETE FROM s_kv WHERE k = ?", k)
		}
	case 9:
		c.exec(p.src, "DELETE FROM s_pair WHERE a = ?", r.IntN(20))
	case 10:
		c.begin(p.src)
		for range 1 + r.IntN(10) {
			c.exec(p.src, "INSERT INTO s_kv(k, tag, v) VALUES (?, 'tx', ?)", p.next, value())
			p.next++
		}
		c.exec(p.src, "SAVEPOINT sp")
		c.exec(p.src, "DELETE FROM s_named")
		c.exec(p.src, "ROLLBACK TO sp")
		c.exec(p.src, "RELEASE sp")
		c.commit(p.src)
	case 11:
		c.begin(p.src)
		c.exec(p.src, "DELETE FROM s_kv")
		c.exec(p.src, "INSERT INTO s_named VALUES ('rolled back', 1, 2)")
		c.rollback(p.src)
	}
}

func caseSessionsWorkload(c *checkT) {
	p := newSessionPair(c)
	empty := p.start()
	if cs := p.changeset(empty); len(cs) != 0 {
		c.errorf("a session that saw no change returned a %d-byte changeset, want an empty one", len(cs))
	} else if err := p.dstS.ApplyChangeset(c.ctx, cs); err != nil {
		c.errorf("applying an empty changeset: %v", err)
	}
	steps := max(5, c.h.Steps/4)
	for step := range steps {
		s := p.start()
		for range 1 + c.rng.IntN(25) {
			p.randomChange()
		}
		cs := p.changeset(s)
		if err := p.dstS.ApplyChangeset(c.ctx, cs); err != nil {
			c.fatalf("step %d: applying a %d-byte changeset to a copy of the source: %v", step, len(cs), err)
		}
		if d := diffDumps(c.dump(p.dst), c.dump(p.src)); d != "" {
			c.fatalf("step %d: after applying the session's %d-byte changeset, the copy differs from the source: %s", step, len(cs), d)
		}
	}
	c.logf("%d session steps", steps)
}

func caseSessionsFilter(c *checkT) {
	p := newSessionPair(c)
	c.exec(p.src, "INSERT INTO s_named VALUES ('kept', 1, NULL)")
	c.restore(p.dst, c.serialize(p.src))
	namedBefore := c.dump(p.dst)["s_named"]
	s := p.start("s_kv")
	for i := range 20 {
		c.exec(p.src, "INSERT INTO s_kv(k, tag) VALUES (?, 'filtered')", i)
		c.exec(p.src, "INSERT INTO s_named VALUES (?, ?, NULL)", fmt.Sprint("n", i), i)
	}
	c.exec(p.src, "DELETE FROM s_named WHERE name = 'kept'")
	cs := p.changeset(s)
	if err := p.dstS.ApplyChangeset(c.ctx, cs); err != nil {
		c.fatalf("ApplyChangeset: %v", err)
	}
	got, want := c.dump(p.dst), c.dump(p.src)
	if d := diffDumps(map[string][]string{"s_kv": got["s_kv"]}, map[string][]string{"s_kv": want["s_kv"]}); d != "" {
		c.errorf("a session on s_kv did not carry its changes: %s", d)
	}
	if d := diffDumps(map[string][]string{"s_named": got["s_named"]}, map[string][]string{"s_named": namedBefore}); d != "" {
		c.errorf("a session started for s_kv only also carried changes to s_named: %s", d)
	}
}

func caseSessionsConflict(c *checkT) {
	p := newSessionPair(c)
	s := p.start()
	for i := range 3 {
		c.exec(p.src, "INSERT INTO s_kv(k, tag) VALUES (?, 'new')", 10+i)
	}
	cs := p.changeset(s)
	// Pre-empt the middle row on the copy: the apply must fail as a whole.
	c.exec(p.dst, "INSERT INTO s_kv(k, tag) VALUES (11, 'already here')")
	before := c.dump(p.dst)
	if err := p.dstS.ApplyChangeset(c.ctx, cs); err == nil {
		c.errorf("a changeset inserting a row whose key exists on the target applied without error")
	}
	if d := diffDumps(c.dump(p.dst), before); d != "" {
		c.errorf("a changeset that hit a conflict was applied in part: %s", d)
	}
	if p.dst.InTransaction() {
		c.errorf("a failed ApplyChangeset left a transaction open")
	}
	// Updating a row the target does not have is a conflict too.
	c.exec(p.dst, "DELETE FROM s_kv")
	c.exec(p.src, "INSERT INTO s_named VALUES ('row', 1, NULL)")
	c.restore(p.dst, c.serialize(p.src))
	s = p.start()
	c.exec(p.src, "UPDATE s_named SET val = 2 WHERE name = 'row'")
	cs = p.changeset(s)
	c.exec(p.dst, "DELETE FROM s_named")
	if err := p.dstS.ApplyChangeset(c.ctx, cs); err == nil {
		c.errorf("a changeset updating a row missing on the target applied without error")
	}
	// And the same changeset applies cleanly where it fits.
	c.restore(p.dst, c.serialize(p.src))
	c.exec(p.dst, "UPDATE s_named SET val = 1 WHERE name = 'row'")
	if err := p.dstS.ApplyChangeset(c.ctx, cs); err != nil {
		c.errorf("applying a changeset to a matching target: %v", err)
	}
	if d := diffDumps(c.dump(p.dst), c.dump(p.src)); d != "" {
		c.errorf("after applying to a matching target the content differs: %s", d)
	}
}

// caseSessionsTriggers: a changeset already holds the rows the source's
// triggers wrote, so applying it must not run the target's triggers again
// (the runtime's _cf_WAKE triggers, or any of the application's, would
// write those rows twice or conflict with the recorded ones).
func caseSessionsTriggers(c *checkT) {
	p := newSessionPair(c)
	schema := `CREATE TABLE trig_src(k INTEGER PRIMARY KEY, v TEXT);
		CREATE TABLE trig_log(id INTEGER PRIMARY KEY, note TEXT);
		CREATE TABLE trig_count(id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
		INSERT INTO trig_count VALUES (1, 0);
		CREATE TRIGGER trig_src_ins AFTER INSERT ON trig_src BEGIN
			INSERT INTO trig_log(note) VALUES ('insert ' || new.k);
			UPDATE trig_count SET n = n + 1 WHERE id = 1;
		END;
		CREATE TRIGGER trig_src_upd AFTER UPDATE ON trig_src BEGIN
			UPDATE trig_count SET n = n + 1 WHERE id = 1;
		END;`
	c.exec(p.src, schema)
	c.restore(p.dst, c.serialize(p.src))
	s := p.start()
	for i := range 4 {
		c.exec(p.src, "INSERT INTO trig_src(k, v) VALUES (?, 'x')", i)
	}
	c.exec(p.src, "UPDATE trig_src SET v = 'y' WHERE k = 2")
	cs := p.changeset(s)
	if err := p.dstS.ApplyChangeset(c.ctx, cs); err != nil {
		c.fatalf("applying a changeset whose tables have triggers: %v (the target's triggers must not run during the apply)", err)
	}
	if d := diffDumps(c.dump(p.dst), c.dump(p.src)); d != "" {
		c.errorf("after applying a changeset over tables with triggers the content differs (the triggers ran again): %s", d)
	}
	// Triggers work again after the apply.
	c.exec(p.dst, "INSERT INTO trig_src(k, v) VALUES (100, 'z')")
	if rows := c.query(p.dst, "SELECT n FROM trig_count"); len(rows) != 1 || rows[0][0] != int64(6) {
		c.errorf("after the apply, a trigger on the target did not run (trig_count %v, want 6)", rows)
	}
}
