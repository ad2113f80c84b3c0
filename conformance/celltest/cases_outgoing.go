package celltest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/cellb/cellb/core/cell"
)

// Gated outgoing I/O (issue 22, point 4): Await's function, a call into
// another cell and a Fetch made by a cell wait until every commit the cell
// made before them is durable, are not made when one fails, and go at
// once under cell.AllowUnconfirmed.

func outgoingCases() []caseDef {
	return []caseDef{
		{"output/outgoing-held-until-durable", caseOutgoingHeld},
		{"output/outgoing-not-made-on-failure", caseOutgoingNotMade},
		{"output/outgoing-allow-unconfirmed", caseOutgoingUnconfirmed},
	}
}

// door is an http.Handler object that counts the requests it serves.
type door struct{ hits *atomic.Int64 }

func (d *door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.hits.Add(1)
	w.Write([]byte("open"))
}

// outgoingRig is a probe class (the caller, "a", and a callee, "b") and a
// door class whose object the caller fetches, all on one runtime whose log
// the case controls.
type outgoingRig struct {
	log   *ControlLog
	pc    *probeClass
	a, b  *cell.Stub[*probe]
	door  *cell.Stub[*door]
	hits  atomic.Int64
	calls atomic.Int64 // calls that reached b
	get   *cell.Method[*probe, string, int64]
	made  atomic.Pointer[chan<- struct{}]
}

func (c *checkT) outgoingRig() *outgoingRig {
	g := &outgoingRig{log: c.controlLog()}
	rt := c.runtime(rtConfig{log: g.log})
	g.pc = c.probeClass(rt, "Out", nil)
	g.a, g.b = g.pc.stub("a"), g.pc.stub("b")
	ns, err := cell.Register(rt, "Door", func(ctx context.Context, st *cell.State) (*door, error) { return &door{&g.hits}, nil })
	if err != nil {
		c.fatalf("Register(Door): %v", err)
	}
	g.door = ns.Get(ns.IDFromName("d"))
	g.get, err = cell.RegisterMethod(g.pc.ns, "get", func(ctx context.Context, q *probe, k string) (int64, error) {
		g.calls.Add(1)
		if m := g.made.Swap(nil); m != nil {
			close(*m)
		}
		return q.get(ctx, k)
	})
	if err != nil {
		c.fatalf("RegisterMethod: %v", err)
	}
	// Activate everything before the log is held.
	must(c, g.a, "warm up a", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	must(c, g.b, "warm up b", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if _, err := g.door.Fetch(c.ctx, httptest.NewRequest("GET", "/", nil)); err != nil {
		c.fatalf("warm up the door: %v", err)
	}
	g.hits.Store(0)
	return g
}

// outgoing is one kind of outgoing I/O a handler of a makes after a write.
type outgoing struct {
	name string
	// do makes the I/O with ctx and closes made once it is made.
	do func(ctx context.Context, g *outgoingRig, made chan<- struct{}) error
}

func outgoingKinds() []outgoing {
	return []outgoing{
		{"Await", func(ctx context.Context, g *outgoingRig, made chan<- struct{}) error {
			_, err := cell.Await(ctx, func(ctx context.Context) (int, error) {
				close(made)
				return 0, nil
			})
			return err
		}},
		{"Call", func(ctx context.Context, g *outgoingRig, made chan<- struct{}) error {
			_, err := cell.Call(ctx, g.b, func(ctx context.Context, q *probe) (int64, error) {
				g.calls.Add(1)
				close(made)
				return q.get(ctx, "n")
			})
			return err
		}},
		{"Method", func(ctx context.Context, g *outgoingRig, made chan<- struct{}) error {
			g.made.Store(&made)
			_, err := g.get.Call(ctx, g.b, "n")
			return err
		}},
		{"Fetch", func(ctx context.Context, g *outgoingRig, made chan<- struct{}) error {
			before := g.hits.Load()
			resp, err := g.door.Fetch(ctx, httptest.NewRequest("GET", "/", nil))
			if g.hits.Load() > before {
				close(made)
			}
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		}},
	}
}

// startOutgoing runs, on a, a handler that writes and then makes o's I/O
// (with ctx edited by mark, if set). wrote closes after the write.
func (g *outgoingRig) startOutgoing(c *checkT, o outgoing, mark func(context.Context) context.Context) (wrote, made chan struct{}, res <-chan result[int64]) {
	wrote, made = make(chan struct{}), make(chan struct{})
	res = callAsync(c.ctx, g.a, func(ctx context.Context, p *probe) (int64, error) {
		v, err := p.incr(ctx, "n")
		if err != nil {
			return 0, err
		}
		close(wrote)
		if mark != nil {
			ctx = mark(ctx)
		}
		return v, o.do(ctx, g, made)
	})
	return wrote, made, res
}

// Outgoing I/O made after a write waits until the write is durable: the
// Await's function, the call into b and the Fetch are not made while the
// log holds the commit, and are made once it is released.
func caseOutgoingHeld(c *checkT) {
	g := c.outgoingRig()
	for _, o := range outgoingKinds() {
		g.log.Hold()
		wrote, made, res := g.startOutgoing(c, o, nil)
		wait(c, wrote, o.name+"'s handler write")
		if !quiet(made, settle) {
			c.errorf("%s was made before the commit written before it was durable", o.name)
		}
		if !reachesLog(c, g.log) {
			c.errorf("%s: the write reached no pending commit in the log", o.name)
		}
		g.log.Release()
		wait(c, made, o.name+" once the commit before it is durable")
		if r := wait(c, res, o.name+"'s handler"); r.err != nil {
			c.errorf("%s's handler failed: %v", o.name, r.err)
		}
	}
}

// When the commit before outgoing I/O fails, the I/O is not made and the
// handler gets the reset (*BrokenObjectError).
func caseOutgoingNotMade(c *checkT) {
	g := c.outgoingRig()
	for _, o := range outgoingKinds() {
		g.log.Hold()
		wrote, made, res := g.startOutgoing(c, o, nil)
		wait(c, wrote, o.name+"'s handler write")
		c.eventually(o.name+"'s commit to reach the log", func() bool { return g.log.Pending() > 0 })
		g.log.Fail(errors.New("injected durability failure"))
		r := wait(c, res, o.name+"'s handler after the failure")
		if !isBroken(r.err) {
			c.errorf("%s after a failed commit returned (%d, %v), want a BrokenObjectError", o.name, r.v, r.err)
		}
		select {
		case <-made:
			c.errorf("%s was made although the commit before it failed", o.name)
		default:
		}
		g.log.Release()
	}
	if n := g.calls.Load(); n != 0 {
		c.errorf("b was called %d times, want 0", n)
	}
}

// AllowUnconfirmed lets outgoing I/O go while the commit before it is
// still held; the handler's own reply still waits for it.
func caseOutgoingUnconfirmed(c *checkT) {
	g := c.outgoingRig()
	for _, o := range outgoingKinds() {
		g.log.Hold()
		_, made, res := g.startOutgoing(c, o, cell.AllowUnconfirmed)
		wait(c, made, o.name+" with AllowUnconfirmed while the commit is held")
		if !quiet(res, settle) {
			c.errorf("%s: the handler's reply left before its commit was durable", o.name)
		}
		g.log.Release()
		if r := wait(c, res, o.name+"'s handler"); r.err != nil {
			c.errorf("%s's handler failed: %v", o.name, r.err)
		}
	}
}
