package celltest

import (
	"context"
	"sync/atomic"

	"github.com/cellb/cellb/core/cell"
)

// probe is the object most cases use: the case's closures run inside its
// turns (through cell.Call) and use its State.
type probe struct {
	st *cell.State
	// gen numbers the instance (1 for the first construction).
	gen int64
}

// Alarm lets cases arm alarms on a probe; a due alarm just succeeds.
func (p *probe) Alarm(ctx context.Context, info cell.AlarmInfo) error { return nil }

// probeClass registers the probe class on rt. Its constructor creates a
// table t(k TEXT PRIMARY KEY, v INTEGER) and counts constructions.
type probeClass struct {
	ns    *cell.Namespace[*probe]
	built atomic.Int64
	// construct, if set, runs at the end of each construction.
	construct func(ctx context.Context, p *probe) error
}

func (c *checkT) probeClass(rt *cell.Runtime, name string, construct func(ctx context.Context, p *probe) error) *probeClass {
	c.rec.Helper()
	pc := &probeClass{construct: construct}
	ns, err := cell.Register(rt, name, func(ctx context.Context, st *cell.State) (*probe, error) {
		p := &probe{st: st, gen: pc.built.Add(1)}
		if _, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS t(k TEXT PRIMARY KEY, v INTEGER)"); err != nil {
			return nil, err
		}
		if pc.construct != nil {
			if err := pc.construct(ctx, p); err != nil {
				return nil, err
			}
		}
		return p, nil
	})
	if err != nil {
		c.fatalf("Register(%s): %v", name, err)
	}
	pc.ns = ns
	return pc
}

func (pc *probeClass) stub(name string) *cell.Stub[*probe] {
	return pc.ns.Get(pc.ns.IDFromName(name))
}

// incr adds one to row k of t and returns the new value.
func (p *probe) incr(ctx context.Context, k string) (int64, error) {
	sql := p.st.SQL()
	var v int64
	err := sql.QueryRow(ctx, "SELECT v FROM t WHERE k = ?", k).Scan(&v)
	if err != nil && err != cell.ErrNoRows {
		return 0, err
	}
	v++
	_, err = sql.Exec(ctx, "INSERT INTO t(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", k, v)
	return v, err
}

// get reads row k of t (0 if absent).
func (p *probe) get(ctx context.Context, k string) (int64, error) {
	var v int64
	err := p.st.SQL().QueryRow(ctx, "SELECT v FROM t WHERE k = ?", k).Scan(&v)
	if err == cell.ErrNoRows {
		return 0, nil
	}
	return v, err
}

// rows counts the rows of t.
func (p *probe) rows(ctx context.Context) (int64, error) {
	var n int64
	err := p.st.SQL().QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
	return n, err
}

// callAsync runs fn on stub in a goroutine; the result arrives on the
// returned channel.
func callAsync[R any](ctx context.Context, s *cell.Stub[*probe], fn func(ctx context.Context, p *probe) (R, error)) <-chan result[R] {
	ch := make(chan result[R], 1)
	go func() {
		v, err := cell.Call(ctx, s, fn)
		ch <- result[R]{v, err}
	}()
	return ch
}

type result[R any] struct {
	v   R
	err error
}

// must runs fn on stub and fails the case on error.
func must[R any](c *checkT, s *cell.Stub[*probe], what string, fn func(ctx context.Context, p *probe) (R, error)) R {
	c.rec.Helper()
	v, err := cell.Call(c.ctx, s, fn)
	if err != nil {
		c.fatalf("%s: %v", what, err)
	}
	return v
}
