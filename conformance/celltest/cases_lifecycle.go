package celltest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
)

func lifecycleCases() []caseDef {
	return []caseDef{
		{"lifecycle/idle-eviction", caseIdleEviction},
		{"lifecycle/idle-connection-released", caseIdleConnReleased},
		{"lifecycle/close-drains", caseCloseDrains},
		{"lifecycle/log-close-final", caseLogCloseFinal},
		{"lifecycle/reset-while-yielded", caseResetWhileYielded},
	}
}

// An idle object is evicted after the idle timeout and comes back with its
// data on the next call.
func caseIdleEviction(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk, idle: time.Minute})
	pc := c.probeClass(rt, "Idle", nil)
	s := pc.stub("a")
	must(c, s, "write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	if !slices.Contains(rt.ActiveCells(), s.Key()) {
		c.errorf("ActiveCells %v lacks the cell just called", rt.ActiveCells())
	}
	clk.Advance(59 * time.Second)
	if !slices.Contains(rt.ActiveCells(), s.Key()) {
		c.errorf("the cell was evicted before the idle timeout")
	}
	clk.Advance(time.Second)
	deadline := time.Now().Add(c.h.Timeout)
	for slices.Contains(rt.ActiveCells(), s.Key()) {
		if time.Now().After(deadline) {
			c.fatalf("the cell was not evicted after the idle timeout")
		}
		time.Sleep(time.Millisecond)
	}
	v := must(c, s, "read after eviction", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if v != 1 || pc.built.Load() != 2 {
		c.errorf("after eviction n=%d with %d constructions, want n=1 and 2 constructions", v, pc.built.Load())
	}
}

// An idle object gives up its database connection after
// Options.IdleConnTimeout and stays in memory: no connection is left open,
// the object is not built again, and its next call reopens the database
// and answers with its data. (A driver wrapper counts the connections the
// runtime has open.)
func caseIdleConnReleased(c *checkT) {
	clk := clock.NewFake(epoch)
	drv := &countingDriver{Driver: c.h.Driver}
	rt := c.runtime(rtConfig{clock: clk, connIdle: 10 * time.Second, driver: drv})
	pc := c.probeClass(rt, "Release", nil)
	s := pc.stub("a")
	for range 2 {
		must(c, s, "write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	}
	if drv.open.Load() == 0 {
		c.fatalf("no connection open after a write")
	}
	clk.Advance(9 * time.Second)
	time.Sleep(settle)
	if drv.open.Load() == 0 {
		c.errorf("the connection was released before the idle-connection timeout")
	}
	clk.Advance(time.Second)
	c.eventually("the idle cell's connection to be closed", func() bool { return drv.open.Load() == 0 })
	if !slices.Contains(rt.ActiveCells(), s.Key()) {
		c.errorf("the cell left memory when its connection was released (ActiveCells %v)", rt.ActiveCells())
	}
	v := must(c, s, "read after the release", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if v != 2 || pc.built.Load() != 1 {
		c.errorf("after the release n=%d with %d constructions, want n=2 and 1 construction", v, pc.built.Load())
	}
	if drv.open.Load() == 0 {
		c.errorf("the call after the release ran without a connection open")
	}
	must(c, s, "write after the release", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	if v := must(c, s, "read", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }); v != 3 {
		c.errorf("n=%d after a write on the reopened connection, want 3", v)
	}
}

// countingDriver counts the connections opened through it and not yet
// closed.
type countingDriver struct {
	driver.Driver
	open atomic.Int64
}

func (d *countingDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	conn, err := d.Driver.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.open.Add(1)
	return &countedConn{Conn: conn, d: d}, nil
}

type countedConn struct {
	driver.Conn
	d      *countingDriver
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if !c.closed.Swap(true) {
		c.d.open.Add(-1)
	}
	return c.Conn.Close()
}

// Close lets events in flight finish and their replies wait for
// durability, refuses new calls, and leaves everything committed.
func caseCloseDrains(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Close", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	entered, release := make(chan struct{}), make(chan struct{})
	inflight := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		close(entered)
		<-release
		return p.incr(ctx, "n")
	})
	wait(c, entered, "the in-flight handler")
	closed := make(chan error, 1)
	go func() { closed <- rt.Close(c.ctx) }()
	c.eventually("calls to be refused once Close started", func() bool {
		_, err := cell.Call(c.ctx, pc.stub("b"), func(ctx context.Context, p *probe) (int, error) { return 0, nil })
		if err != nil && !errors.Is(err, cell.ErrClosed) {
			c.fatalf("a call during Close returned %v, want ErrClosed", err)
		}
		return err != nil
	})
	log.Hold()
	close(release)
	if !quiet(closed, settle) {
		c.errorf("Close returned while a reply still waited for durability")
	}
	log.Release()
	if r := wait(c, inflight, "the in-flight call"); r.err != nil || r.v != 2 {
		c.errorf("the in-flight call during Close returned (%d, %v), want (2, nil)", r.v, r.err)
	}
	if err := wait(c, closed, "Close"); err != nil {
		c.errorf("Close: %v", err)
	}
	conn := c.openRaw(rt.DataDir(), s.Key())
	if rows := c.rawRows(conn, "SELECT v FROM t WHERE k = 'n'"); len(rows) != 1 || rows[0][0] != int64(2) {
		c.errorf("after Close the database holds %v, want [[2]]", rows)
	}
}

// page is an http.Handler object.
type page struct{ st *cell.State }

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var n int64
	sql := p.st.SQL()
	if _, err := sql.Exec(r.Context(), "CREATE TABLE IF NOT EXISTS hits(n INTEGER)"); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	if _, err := sql.Exec(r.Context(), "INSERT INTO hits VALUES(1)"); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	sql.QueryRow(r.Context(), "SELECT count(*) FROM hits").Scan(&n)
	w.Header().Set("X-Hits", "yes")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, r.URL.Path+" "+strings.Repeat("!", int(n)))
}

// Fetch-style requests reach an http.Handler object and come back whole.
func caseFetch(c *checkT) {
	rt := c.runtime(rtConfig{})
	ns, err := cell.Register(rt, "Page", func(ctx context.Context, st *cell.State) (*page, error) { return &page{st}, nil })
	if err != nil {
		c.fatalf("Register: %v", err)
	}
	s := ns.Get(ns.IDFromName("a"))
	req := httptest.NewRequest("GET", "/hello", nil)
	resp, err := s.Fetch(c.ctx, req)
	if err != nil {
		c.fatalf("Fetch: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Hits") != "yes" || string(body) != "/hello !" {
		c.errorf("Fetch returned %d %v %q", resp.StatusCode, resp.Header, body)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/again", nil))
	if rec.Code != http.StatusCreated || rec.Body.String() != "/again !!" {
		c.errorf("ServeHTTP returned %d %q", rec.Code, rec.Body.String())
	}
	pcls := c.probeClass(rt, "NotHTTP", nil)
	if _, err := pcls.stub("a").Fetch(c.ctx, req); !errors.Is(err, cell.ErrNotHTTPHandler) {
		c.errorf("Fetch to an object without ServeHTTP: %v, want ErrNotHTTPHandler", err)
	}
}

// EvictAll models a crash: the log is closed with final=false. Eviction
// and Close close it with final=true.
func caseLogCloseFinal(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Final", nil)
	s := pc.stub("a")
	must(c, s, "write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	rt.EvictAll()
	c.eventually("the log to be closed after EvictAll", func() bool { return len(log.Closes()) == 1 })
	if log.Closes()[0] {
		c.errorf("EvictAll closed the log with final=true; it models a crash")
	}
	must(c, s, "write again", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	if err := rt.Close(c.ctx); err != nil {
		c.fatalf("Close: %v", err)
	}
	if cl := log.Closes(); len(cl) != 2 || !cl[1] {
		c.errorf("log closes %v, want [false true] (Close is orderly)", cl)
	}
}

// A handler yielded in Await when its object resets gets the reset when it
// comes back, and its later writes never commit.
func caseResetWhileYielded(c *checkT) {
	ls := newTestLease()
	rt := c.runtime(rtConfig{lease: ls})
	pc := c.probeClass(rt, "Yielded", nil)
	s := pc.stub("a")
	inAwait, resume := make(chan struct{}), make(chan struct{})
	res := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		if _, err := p.incr(ctx, "before"); err != nil {
			return 0, err
		}
		_, err := cell.Await(ctx, func(ctx context.Context) (int, error) {
			close(inAwait)
			<-resume
			return 0, nil
		})
		if !isBroken(err) {
			c.errorf("Await after a reset returned %v, want a BrokenObjectError", err)
		}
		p.incr(ctx, "after") // must not commit
		return 0, err
	})
	wait(c, inAwait, "the handler in Await")
	ls.revokeAll(errors.New("lease taken over"))
	c.eventually("the reset to take the cell out of memory", func() bool { return !slices.Contains(rt.ActiveCells(), s.Key()) })
	close(resume)
	if r := wait(c, res, "the yielded call"); !isBroken(r.err) {
		c.errorf("the yielded call returned %v, want a BrokenObjectError", r.err)
	}
	type ba struct{ before, after int64 }
	v := must(c, s, "read back", func(ctx context.Context, p *probe) (ba, error) {
		b, err := p.get(ctx, "before")
		if err != nil {
			return ba{}, err
		}
		a, err := p.get(ctx, "after")
		return ba{b, a}, err
	})
	if v.before != 1 || v.after != 0 {
		c.errorf("after the reset before=%d after=%d, want 1 and 0 (the write before the yield committed; nothing after it)", v.before, v.after)
	}
}
