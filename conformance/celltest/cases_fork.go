package celltest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// Fork (issue 23): State.ForkTo and Runtime.Fork.
func forkCases() []caseDef {
	return []caseDef{
		{"storage/fork", caseFork},
	}
}

// A fork copies a cell's state, now or at a bookmark, into a cell never
// written: its SQL rows and its KV become the destination's own, its alarm
// does not come along, and the two cells go their own ways after. A
// destination that was written, or is active, is refused with
// *durability.ForkDestinationWrittenError; a log without point-in-time
// history refuses with *durability.NoForkError. The copies survive the
// runtime: another one restores them from the bucket.
func caseFork(c *checkT) {
	// A millisecond per request (real time), so that the racing forks
	// below overlap.
	bucket := faultstore.New(memstore.New(), faultstore.Config{All: faultstore.Faults{Latency: time.Millisecond}})
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	open := func() durability.Log {
		l, err := ltxlog.New(ltxlog.Options{Store: bucket, Clock: clk, Logger: quietLogger(), CompactAfter: -1,
			UploadRetries: -1, RetryDelay: time.Millisecond})
		if err != nil {
			c.fatalf("open the LTX log: %v", err)
		}
		return l
	}
	ls := bucketWinsLease()
	rt := c.runtime(rtConfig{log: open(), lease: ls, clock: clk})
	pc := c.probeClass(rt, "Fork", nil)
	key := func(name string) string { return pc.ns.Key(pc.ns.IDFromName(name)) }
	a := pc.stub("a")

	type state struct {
		n     int64
		kv    string
		alarm bool
	}
	read := func(what string, s *cell.Stub[*probe]) state {
		return must(c, s, what, func(ctx context.Context, p *probe) (state, error) {
			var st state
			var err error
			if st.n, err = p.get(ctx, "n"); err != nil {
				return st, err
			}
			if _, err = p.st.KV().GetInto(ctx, "k", &st.kv); err != nil {
				return st, err
			}
			_, st.alarm, err = p.st.GetAlarm(ctx)
			return st, err
		})
	}

	// a: n = 5, a KV entry and an alarm; a bookmark; then n = 6.
	b5 := must(c, a, "write the source", func(ctx context.Context, p *probe) (string, error) {
		for range 5 {
			if _, err := p.incr(ctx, "n"); err != nil {
				return "", err
			}
		}
		if err := p.st.KV().Put(ctx, "k", "from a"); err != nil {
			return "", err
		}
		if err := p.st.SetAlarm(ctx, clk.Now().Add(time.Hour)); err != nil {
			return "", err
		}
		return p.st.CurrentBookmark(ctx)
	})
	now := must(c, a, "write once more and fork into b", func(ctx context.Context, p *probe) (string, error) {
		if _, err := p.incr(ctx, "n"); err != nil {
			return "", err
		}
		return p.st.ForkTo(ctx, key("b"), "")
	})
	if _, err := durability.ParseBookmark(now); err != nil || !(b5 < now) {
		c.errorf("ForkTo returned bookmark %q (%v), want one after the earlier %q", now, err, b5)
	}
	at, err := rt.Fork(c.ctx, key("a"), key("c"), b5)
	if err != nil || at != b5 {
		c.fatalf("Runtime.Fork at bookmark %s: %q, %v", b5, at, err)
	}

	check := func(what string, got, want state) {
		if got != want {
			c.errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	check("the fork of a now (b)", read("read b", pc.stub("b")), state{n: 6, kv: "from a"})
	check("the fork of a at the bookmark (c)", read("read c", pc.stub("c")), state{n: 5, kv: "from a"})
	check("the source after two forks", read("read a", a), state{n: 6, kv: "from a", alarm: true})

	// The cells are independent from now on.
	must(c, pc.stub("b"), "write b", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	if got := read("read a after b wrote", a); got.n != 6 {
		c.errorf("a write to the fork changed the source: a.n = %d, want 6", got.n)
	}

	// Destinations that are not new.
	var written *durability.ForkDestinationWrittenError
	if _, err := rt.Fork(c.ctx, key("a"), key("b"), ""); !errors.As(err, &written) {
		c.errorf("fork into a cell that was written: %v, want *durability.ForkDestinationWrittenError", err)
	}
	must(c, pc.stub("d"), "read d (activates it, writes nothing)", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if _, err := rt.Fork(c.ctx, key("a"), key("d"), ""); !errors.As(err, &written) {
		c.errorf("fork into a cell active on this node: %v, want *durability.ForkDestinationWrittenError", err)
	}
	if _, err := rt.Fork(c.ctx, key("a"), key("a"), ""); !errors.As(err, &written) {
		c.errorf("fork of a cell into itself: %v, want *durability.ForkDestinationWrittenError", err)
	}

	// Forks racing into one new cell: exactly one applies, the others are
	// refused as written (or in use).
	var won, refused atomic.Int64
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			_, err := rt.Fork(c.ctx, key("a"), key("f"), "")
			switch {
			case err == nil:
				won.Add(1)
			case errors.As(err, new(*durability.ForkDestinationWrittenError)):
				refused.Add(1)
			default:
				c.errorf("a racing fork: %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || refused.Load() != 23 {
		c.errorf("24 racing forks into one cell: %d applied, %d refused; want 1 and 23", won.Load(), refused.Load())
	}
	check("the cell 24 forks raced into", read("read f", pc.stub("f")), state{n: 6, kv: "from a"})

	// Another runtime restores the forks from the bucket.
	c.closeRuntime(rt)
	rt = c.runtime(rtConfig{log: open(), lease: ls, clock: clk})
	pc = c.probeClass(rt, "Fork", nil)
	check("b on another runtime", read("read b again", pc.stub("b")), state{n: 7, kv: "from a"})
	check("c on another runtime", read("read c again", pc.stub("c")), state{n: 5, kv: "from a"})

	// A log without point-in-time history cannot fork.
	rtLocal := c.runtime(rtConfig{})
	pl := c.probeClass(rtLocal, "Fork", nil)
	must(c, pl.stub("a"), "fork on the local log", func(ctx context.Context, p *probe) (int, error) {
		if _, err := p.incr(ctx, "n"); err != nil {
			return 0, err
		}
		var nf *durability.NoForkError
		var nb *durability.NoBookmarksError
		if _, err := p.st.ForkTo(ctx, pl.ns.Key(pl.ns.IDFromName("e")), ""); !errors.As(err, &nf) && !errors.As(err, &nb) {
			c.errorf("ForkTo on the local log: %v, want a *durability.NoForkError or *durability.NoBookmarksError", err)
		}
		return 0, nil
	})
}
