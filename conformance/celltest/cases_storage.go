package celltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/store/memstore"
)

// The rest of Durable Objects' storage and state API (issue 23):
// DeleteAll, Sync, Abort, exact cursors, transactions that yield, limits.
func storageCases() []caseDef {
	return []caseDef{
		{"storage/delete-all", caseDeleteAll},
		{"storage/sync", caseSync},
		{"storage/abort", caseAbort},
		{"storage/cursors", caseCursors},
		{"storage/transaction", caseTransactionAwait},
		{"storage/limits", caseLimits},
	}
}

// userSchema lists the object's own schema objects (celld's and SQLite's
// left out).
func userSchema(ctx context.Context, p *probe) ([]string, error) {
	rows, err := p.st.SQL().Query(ctx, `SELECT type || ' ' || name FROM sqlite_schema WHERE name NOT LIKE '\_cf\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteAll deletes the SQL schema and rows, KV and the alarm in the
// turn's one commit: a handler that panics after it keeps everything, one
// that returns leaves an empty database, which is what the log restores
// elsewhere. Inside SQL.Transaction it is refused and changes nothing.
func caseDeleteAll(c *checkT) {
	bucket := memstore.New()
	m := bucketModes()[0] // the LTX log
	ls := bucketWinsLease()
	rt := c.runtime(rtConfig{log: c.bucketLog(m, bucket), lease: ls})
	pc := c.probeClass(rt, "DeleteAll", nil)
	s := pc.stub("a")
	far := time.Now().Add(24 * time.Hour)
	must(c, s, "fill the cell", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		for _, q := range []string{
			"CREATE TABLE parent(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT)",
			"CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id))",
			"CREATE INDEX child_parent ON child(parent)",
			"CREATE VIEW names AS SELECT name FROM parent",
			"CREATE TRIGGER parent_ins AFTER INSERT ON parent BEGIN INSERT INTO child(parent) VALUES(NEW.id); END",
			"PRAGMA foreign_keys = ON",
			"INSERT INTO parent(name) VALUES('x'), ('y')",
			"PRAGMA user_version = 7",
		} {
			if _, err := sql.Exec(ctx, q); err != nil {
				return 0, err
			}
		}
		if _, err := p.incr(ctx, "n"); err != nil {
			return 0, err
		}
		if err := p.st.KV().Put(ctx, "k", "v"); err != nil {
			return 0, err
		}
		return 0, p.st.SetAlarm(ctx, far)
	})

	// Refused inside a transaction, changing nothing.
	must(c, s, "DeleteAll inside a transaction", func(ctx context.Context, p *probe) (int, error) {
		err := p.st.SQL().Transaction(ctx, func(ctx context.Context) error { return p.st.DeleteAll(ctx) })
		if !errors.Is(err, cell.ErrDeleteAllInTransaction) {
			c.errorf("DeleteAll inside SQL.Transaction: %v, want ErrDeleteAllInTransaction", err)
		}
		return 0, nil
	})
	// A panic after DeleteAll rolls the whole of it back.
	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		if err := p.st.DeleteAll(ctx); err != nil {
			c.errorf("DeleteAll before the panic: %v", err)
		}
		panic("after DeleteAll")
	})
	if !isBroken(err) {
		c.errorf("a handler that panicked after DeleteAll returned %v, want a reset", err)
	}
	must(c, s, "check that nothing was deleted", func(ctx context.Context, p *probe) (int, error) {
		schema, err := userSchema(ctx, p)
		if err != nil {
			return 0, err
		}
		if len(schema) != 6 { // t, parent, child, child_parent, names, parent_ins
			c.errorf("after DeleteAll and a panic the schema is %q: DeleteAll was not rolled back with the turn", schema)
		}
		if n, err := p.get(ctx, "n"); n != 1 || err != nil {
			c.errorf("after DeleteAll and a panic n = %d (%v), want 1", n, err)
		}
		if _, ok, err := p.st.KV().Get(ctx, "k"); !ok || err != nil {
			c.errorf("after DeleteAll and a panic KV k found=%v (%v), want kept", ok, err)
		}
		if _, ok, err := p.st.GetAlarm(ctx); !ok || err != nil {
			c.errorf("after DeleteAll and a panic the alarm is set=%v (%v), want kept", ok, err)
		}
		return 0, nil
	})

	must(c, s, "DeleteAll", func(ctx context.Context, p *probe) (int, error) {
		if err := p.st.DeleteAll(ctx); err != nil {
			return 0, err
		}
		if schema, err := userSchema(ctx, p); len(schema) != 0 || err != nil {
			c.errorf("after DeleteAll the schema is %q (%v), want empty", schema, err)
		}
		if es, err := p.st.KV().List(ctx, cell.ListOptions{}); len(es) != 0 || err != nil {
			c.errorf("after DeleteAll KV lists %d entries (%v)", len(es), err)
		}
		if _, ok, err := p.st.GetAlarm(ctx); ok || err != nil {
			c.errorf("after DeleteAll the alarm is set=%v (%v), want deleted", ok, err)
		}
		return 0, nil
	})
	c.closeRuntime(rt)

	// What the log holds is the empty database: a fresh node restores it.
	rt2 := c.runtime(rtConfig{log: c.bucketLog(m, bucket), lease: ls})
	pc2 := c.probeClass(rt2, "DeleteAll", nil)
	must(c, pc2.stub("a"), "read the restored cell", func(ctx context.Context, p *probe) (int, error) {
		schema, err := userSchema(ctx, p)
		if err != nil {
			return 0, err
		}
		// The constructor created t again, nothing else.
		if strings.Join(schema, ",") != "table t" {
			c.errorf("the restored cell's schema is %q, want only the constructor's table t", schema)
		}
		if n, err := p.rows(ctx); n != 0 || err != nil {
			c.errorf("the restored cell's t holds %d rows (%v), want 0", n, err)
		}
		if es, err := p.st.KV().List(ctx, cell.ListOptions{}); len(es) != 0 || err != nil {
			c.errorf("the restored cell's KV lists %d entries (%v)", len(es), err)
		}
		if _, ok, err := p.st.GetAlarm(ctx); ok || err != nil {
			c.errorf("the restored cell's alarm is set=%v (%v), want none", ok, err)
		}
		var uv int64
		if err := p.st.SQL().QueryRow(ctx, "PRAGMA user_version").Scan(&uv); uv != 0 || err != nil {
			c.errorf("the restored cell's user_version = %d (%v), want 0", uv, err)
		}
		return 0, nil
	})
}

// Sync returns only once the commits made before it are durable, and the
// handler's turn commits first (other events run meanwhile).
func caseSync(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Sync", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })

	log.Hold()
	synced := make(chan struct{})
	wrote := make(chan struct{})
	w := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		v, err := p.incr(ctx, "n")
		if err != nil {
			return 0, err
		}
		close(wrote) // the read below queues behind this turn
		if err := p.st.Sync(ctx); err != nil {
			return 0, err
		}
		close(synced)
		return v, nil
	})
	wait(c, wrote, "the write before Sync")
	// Sync ended the turn: another event runs and reads the commit (its
	// reply waits for the commit, as any reply does).
	readRan := make(chan int64, 1)
	r := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		v, err := p.get(ctx, "n")
		readRan <- v
		return v, err
	})
	if v := wait(c, readRan, "a read while Sync waits"); v != 2 {
		c.errorf("a read while Sync waits saw n=%d, want 2 (Sync commits the turn first)", v)
	}
	if !quiet(synced, settle) {
		c.errorf("Sync returned while the commit before it was not durable")
	}
	if !reachesLog(c, log) {
		c.errorf("the write before Sync reached no pending commit in the log")
	}
	log.Release()
	wait(c, synced, "Sync after the commit became durable")
	if v := wait(c, w, "the syncing handler's reply"); v.err != nil || v.v != 2 {
		c.errorf("the syncing handler returned %d (%v), want 2", v.v, v.err)
	}
	if v := wait(c, r, "the read's reply"); v.err != nil || v.v != 2 {
		c.errorf("the read returned %d (%v), want 2", v.v, v.err)
	}

	// A failed commit: Sync reports the reset.
	log.Hold()
	failed := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		if _, err := p.incr(ctx, "n"); err != nil {
			return 0, err
		}
		return 0, p.st.Sync(ctx)
	})
	c.eventually("the commit before Sync to be pending", func() bool { return log.Pending() > 0 })
	log.Fail(errors.New("injected upload failure"))
	if v := wait(c, failed, "Sync after a failed commit"); !isBroken(v.err) {
		c.errorf("Sync behind a failed commit returned %v, want a reset", v.err)
	}
}

// logBuffer is a slog handler's output, safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Abort resets the object at once: the handler does not go on (even if it
// recovers), its writes are discarded, its caller and the queued callers
// get the reason, the next call reaches a fresh instance, and no panic is
// logged.
func caseAbort(c *checkT) {
	var logs logBuffer
	prev := c.h.Configure
	c.h.Configure = func(o *cell.Options) {
		if prev != nil {
			prev(o)
		}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}
	rt := c.runtime(rtConfig{})
	c.h.Configure = prev
	pc := c.probeClass(rt, "Abort", nil)
	s := pc.stub("a")
	must(c, s, "write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })

	entered := make(chan struct{})
	proceed := make(chan struct{})
	wentOn := make(chan struct{}, 1)
	a := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (v int64, err error) {
		defer func() {
			if r := recover(); r != nil {
				v, err = 99, nil // try to swallow the abort
			}
		}()
		if _, err := p.incr(ctx, "n"); err != nil {
			return 0, err
		}
		close(entered)
		<-proceed
		p.st.Abort(ctx, "the test wants a fresh start")
		wentOn <- struct{}{}
		return 1, nil
	})
	wait(c, entered, "the aborting handler")
	var queued []<-chan result[int64]
	for range 3 {
		queued = append(queued, callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }))
	}
	time.Sleep(settle) // let the queued calls reach the gate (a late one reaches the fresh instance: also fine)
	close(proceed)
	v := wait(c, a, "the aborting handler's reply")
	if !isBroken(v.err) || !strings.Contains(v.err.Error(), "the test wants a fresh start") {
		c.errorf("the aborting handler's caller got (%d, %v), want a reset naming the reason", v.v, v.err)
	}
	var ae *cell.AbortError
	if !errors.As(v.err, &ae) || ae.Reason != "the test wants a fresh start" {
		c.errorf("the reset's cause is %v, want a *cell.AbortError with the reason", v.err)
	}
	select {
	case <-wentOn:
		c.errorf("the handler went on after Abort")
	default:
	}
	for i, ch := range queued {
		q := wait(c, ch, "a queued call")
		if q.err == nil {
			if q.v != 1 {
				c.errorf("queued call %d reached a fresh instance and read n=%d, want 1 (the aborted write discarded)", i, q.v)
			}
			continue
		}
		if !isBroken(q.err) || !strings.Contains(q.err.Error(), "the test wants a fresh start") {
			c.errorf("queued call %d got %v, want a reset naming the reason", i, q.err)
		}
	}
	if n := must(c, s, "read after the abort", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }); n != 1 {
		c.errorf("after Abort n=%d, want 1: the aborted turn's write was kept", n)
	}
	if g := must(c, s, "generation", func(ctx context.Context, p *probe) (int64, error) { return p.gen, nil }); g != 2 {
		c.errorf("after Abort the object is generation %d, want 2 (a fresh instance)", g)
	}
	if out := logs.String(); strings.Contains(out, "panicked") || strings.Contains(out, "stack=") {
		c.errorf("Abort logged a panic: %s", out)
	}
}

// One takes exactly one row (typed errors for none and several), QueryAll
// every row, and statements report the rows they read and wrote where the
// driver counts them.
func caseCursors(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Cursors", nil)
	s := pc.stub("a")
	counts := c.h.Driver.Capabilities().StatementCounters
	must(c, s, "cursors", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		res, err := sql.Exec(ctx, "INSERT INTO t(k, v) VALUES ('a', 1), ('b', 2), ('c', 3)")
		if err != nil {
			return 0, err
		}
		if res.Counted != counts || (counts && (res.RowsWritten != 3 || res.RowsRead != 0)) {
			c.errorf("INSERT of 3 rows: counted=%v read=%d written=%d; want counted=%v (the driver's capability) and 0 read, 3 written", res.Counted, res.RowsRead, res.RowsWritten, counts)
		}
		var v int64
		if err := sql.One(ctx, "SELECT v FROM t WHERE k = ?", "b").Scan(&v); err != nil || v != 2 {
			c.errorf("One with one row: %d, %v; want 2", v, err)
		}
		var rce *cell.RowCountError
		err = sql.One(ctx, "SELECT v FROM t WHERE k = ?", "zz").Scan(&v)
		if !errors.As(err, &rce) || rce.Several || !errors.Is(err, cell.ErrNoRows) {
			c.errorf("One with no row: %v, want a *cell.RowCountError matching ErrNoRows", err)
		}
		err = sql.One(ctx, "SELECT v FROM t WHERE v >= 2 ORDER BY v").Scan(&v)
		if !errors.As(err, &rce) || !rce.Several || !errors.Is(err, cell.ErrMultipleRows) || errors.Is(err, cell.ErrNoRows) {
			c.errorf("One with two rows: %v, want a *cell.RowCountError matching ErrMultipleRows", err)
		}
		cols, all, err := sql.QueryAll(ctx, "SELECT k, v FROM t ORDER BY k")
		if err != nil {
			return 0, err
		}
		if len(cols) != 2 || cols[0] != "k" || len(all) != 3 || all[2][0] != "c" || all[2][1] != int64(3) {
			c.errorf("QueryAll = %v %v, want columns k, v and the rows a..c", cols, all)
		}
		rows, err := sql.Query(ctx, "SELECT k FROM t")
		if err != nil {
			return 0, err
		}
		rest, err := rows.All()
		if err != nil || len(rest) != 3 {
			c.errorf("Rows.All = %d rows (%v), want 3", len(rest), err)
		}
		read, written, ok := rows.Counters()
		if ok != counts || (counts && (read != 3 || written != 0)) {
			c.errorf("a full SELECT of 3 rows: Counters() = %d read, %d written, counted=%v; want 3, 0, %v", read, written, ok, counts)
		}
		rows, err = sql.Query(ctx, "UPDATE t SET v = v * 10 RETURNING v")
		if err != nil {
			return 0, err
		}
		if _, err := rows.All(); err != nil {
			return 0, err
		}
		if _, written, _ := rows.Counters(); counts && written != 3 {
			c.errorf("UPDATE ... RETURNING of 3 rows: %d written, want 3", written)
		}
		return 0, nil
	})
}

// A transaction may yield: it keeps the gate (no other event runs while
// its Await blocks) and its writes (none commits at the yield); an error
// returned from it rolls every write back and resets nothing.
func caseTransactionAwait(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Txn", nil)
	s := pc.stub("a")
	errRefused := errors.New("the transfer was refused")
	for i, fail := range []bool{true, false} {
		inAwait := make(chan struct{})
		release := make(chan struct{})
		t := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
			sql := p.st.SQL()
			err := sql.Transaction(ctx, func(ctx context.Context) error {
				if _, err := sql.Exec(ctx, "INSERT INTO t(k, v) VALUES(?, 1)", fmt.Sprint("debit", i)); err != nil {
					return err
				}
				if _, err := cell.Await(ctx, func(ctx context.Context) (int, error) {
					close(inAwait)
					<-release
					return 0, nil
				}); err != nil {
					return err
				}
				if _, err := sql.Exec(ctx, "INSERT INTO t(k, v) VALUES(?, 1)", fmt.Sprint("credit", i)); err != nil {
					return err
				}
				if fail {
					return errRefused
				}
				return nil
			})
			return p.gen, err
		})
		wait(c, inAwait, "the transaction's Await")
		other := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.rows(ctx) })
		if !quiet(other, settle) {
			c.errorf("another event ran while a transaction's Await blocked (the transaction must keep the gate)")
		}
		close(release)
		v := wait(c, t, "the transaction's handler")
		n := wait(c, other, "the event queued behind the transaction")
		if fail {
			if !errors.Is(v.err, errRefused) || isBroken(v.err) {
				c.errorf("a transaction that returned an error: the handler got %v, want that error (no reset)", v.err)
			}
			if n.err != nil || n.v != 0 {
				c.errorf("after a failed transaction t holds %d rows (%v), want 0: its writes, across the Await, were kept", n.v, n.err)
			}
			if g := must(c, s, "generation", func(ctx context.Context, p *probe) (int64, error) { return p.gen, nil }); g != 1 {
				c.errorf("a failed transaction reset the object (generation %d)", g)
			}
			continue
		}
		if v.err != nil || n.err != nil || n.v != 2 {
			c.errorf("a transaction that succeeded: handler %v; t then holds %d rows (%v), want 2", v.err, n.v, n.err)
		}
	}
}

// Durable Objects' limits are the defaults, each refused with a
// *cell.LimitError naming it, and what was refused is not stored; the
// database size limit is SQLite's own (a write past it fails and is
// undone, the turn's earlier writes stay).
func caseLimits(c *checkT) {
	prev := c.h.Configure
	c.h.Configure = func(o *cell.Options) {
		o.Limits.MaxDatabaseBytes = 512 << 10 // the others keep their defaults
		if prev != nil {
			prev(o) // a twin's settings win
		}
	}
	rt := c.runtime(rtConfig{})
	c.h.Configure = prev
	pc := c.probeClass(rt, "Limits", nil)
	s := pc.stub("a")
	expect := func(what string, err error, limit cell.Limit) {
		var le *cell.LimitError
		if !errors.As(err, &le) || le.Limit != limit || !strings.Contains(err.Error(), string(limit)) {
			c.errorf("%s: %v, want a *cell.LimitError naming %q", what, err, limit)
		}
	}
	must(c, s, "limits", func(ctx context.Context, p *probe) (int, error) {
		sql := p.st.SQL()
		long := "SELECT 1 /*" + strings.Repeat("x", cell.DefaultMaxStatementBytes) + "*/"
		_, err := sql.Exec(ctx, long)
		expect("a statement over 100 KB", err, cell.LimitStatementSize)
		if _, err := sql.Exec(ctx, "SELECT 1 /*"+strings.Repeat("x", 1000)+"*/"); err != nil {
			c.errorf("a 1 KB statement: %v", err)
		}
		args := make([]any, cell.DefaultMaxBoundParameters+1)
		marks := make([]string, len(args))
		for i := range args {
			args[i], marks[i] = i, "?"
		}
		_, err = sql.Query(ctx, "SELECT "+strings.Join(marks, ","), args...)
		expect("101 bound parameters", err, cell.LimitBoundParameters)
		rows, err := sql.Query(ctx, "SELECT "+strings.Join(marks[:100], ","), args[:100]...)
		if err != nil {
			c.errorf("100 bound parameters: %v", err)
		} else {
			rows.Close()
		}
		big := strings.Repeat("v", cell.DefaultMaxValueBytes+1)
		_, err = sql.Exec(ctx, "INSERT INTO t(k, v) VALUES('big', ?)", big)
		expect("a value over 2 MB", err, cell.LimitValueSize)
		half := strings.Repeat("h", cell.DefaultMaxValueBytes/2+1)
		_, err = sql.Exec(ctx, "INSERT INTO t(k, v) VALUES(?, ?)", half, half)
		expect("a row over 2 MB", err, cell.LimitRowSize)
		err = p.st.KV().Put(ctx, "big", big)
		expect("a KV value over 2 MB", err, cell.LimitValueSize)
		cols := make([]string, cell.DefaultMaxColumns+1)
		for i := range cols {
			cols[i] = fmt.Sprintf("c%d", i)
		}
		_, err = sql.Exec(ctx, "CREATE TABLE wide("+strings.Join(cols, ", ")+")")
		expect("a table of 101 columns", err, cell.LimitColumns)
		if _, err := sql.Exec(ctx, "CREATE TABLE wide("+strings.Join(cols[:100], ", ")+")"); err != nil {
			c.errorf("a table of 100 columns: %v", err)
		}
		_, err = sql.Exec(ctx, "ALTER TABLE wide ADD COLUMN c100")
		expect("a column added past 100", err, cell.LimitColumns)
		if n, err := p.rows(ctx); n != 0 || err != nil {
			c.errorf("t holds %d rows (%v) after refused writes, want 0", n, err)
		}
		return 0, nil
	})

	// Database size: SQLite refuses the write that would pass it. If it
	// cancels the turn's transaction doing so, the object is reset (the
	// cause still names the limit); rows committed before stay.
	must(c, s, "rows before the size limit", func(ctx context.Context, p *probe) (int, error) {
		_, err := p.st.SQL().Exec(ctx, "CREATE TABLE blobs(b BLOB); INSERT INTO blobs VALUES(zeroblob(32768)), (zeroblob(32768))")
		return 0, err
	})
	_, full := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		for range 40 {
			if _, err := p.st.SQL().Exec(ctx, "INSERT INTO blobs VALUES(zeroblob(32768))"); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	expect("writes past a 512 KiB database", full, cell.LimitDatabaseSize)
	if n, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		var n int64
		err := p.st.SQL().One(ctx, "SELECT count(*) FROM blobs").Scan(&n)
		return n, err
	}); err != nil || n < 2 || n > 16 {
		c.errorf("after the size limit refused a write, blobs holds %d rows of 32 KiB (%v), want the 2 committed before and no more than fit in 512 KiB", n, err)
	}
	if _, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		_, err := p.st.SQL().Exec(ctx, "SELECT 1 FROM wide WHERE c100 IS NULL")
		return 0, err
	}); err == nil {
		c.errorf("the column the limit refused exists")
	}
}
