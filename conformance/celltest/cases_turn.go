package celltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
)

func turnCases() []caseDef {
	return []caseDef{
		{"turn/atomic-crash", caseAtomicCrash},
		{"turn/atomic-panic", caseAtomicPanic},
		{"turn/interleave-only-at-yields", caseInterleave},
		{"turn/fifo-gate", caseFIFO},
		{"turn/stub-call-yields", caseStubCallYields},
		{"turn/fan-out", caseFanOut},
		{"turn/not-in-turn", caseNotInTurn},
		{"turn/fetch", caseFetch},
	}
}

// A crash (EvictAll) in the middle of a turn loses the whole turn: its
// first write must not survive without its second.
func caseAtomicCrash(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Atomic", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int, error) { return 0, nil })

	entered, release := make(chan struct{}), make(chan struct{})
	res := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		if _, err := p.st.SQL().Exec(ctx, "INSERT INTO t VALUES('first', 1)"); err != nil {
			return 0, err
		}
		close(entered)
		<-release
		_, err := p.st.SQL().Exec(ctx, "INSERT INTO t VALUES('second', 2)")
		return 0, err
	})
	wait(c, entered, "the handler's first write")
	rt.EvictAll()
	close(release)
	if r := wait(c, res, "the interrupted call"); !isBroken(r.err) {
		c.errorf("a call interrupted by EvictAll returned %v, want a BrokenObjectError", r.err)
	}
	n := must(c, s, "count rows", func(ctx context.Context, p *probe) (int64, error) { return p.rows(ctx) })
	if n != 0 {
		c.errorf("after a crash mid-turn the table holds %d rows, want 0: the turn was not atomic", n)
	}
	if g := pc.built.Load(); g != 2 {
		c.errorf("the object was constructed %d times, want 2 (a fresh instance after EvictAll)", g)
	}
}

// A panicking handler's writes are rolled back, the caller gets a
// BrokenObjectError, the process survives and the next call builds a
// fresh instance.
func caseAtomicPanic(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Panic", nil)
	s := pc.stub("a")
	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		if _, err := p.st.SQL().Exec(ctx, "INSERT INTO t VALUES('x', 1)"); err != nil {
			return 0, err
		}
		panic("boom")
	})
	if !isBroken(err) {
		c.errorf("a panicking handler returned %v, want a BrokenObjectError", err)
	}
	var pe *cell.PanicError
	if !errors.As(err, &pe) {
		c.errorf("the reset error %v does not carry the *cell.PanicError", err)
	}
	n := must(c, s, "count rows", func(ctx context.Context, p *probe) (int64, error) { return p.rows(ctx) })
	if n != 0 {
		c.errorf("a panicking handler's write survived (%d rows)", n)
	}
	if g := pc.built.Load(); g != 2 {
		c.errorf("the object was constructed %d times, want 2", g)
	}
}

// Blocking without yielding holds the gate; Await lets other events run.
func caseInterleave(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Interleave", nil)
	s := pc.stub("a")

	// 1. No yield: a read-modify-write spanning a block is not interleaved.
	entered, release := make(chan struct{}), make(chan struct{})
	first := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		v, err := p.get(ctx, "n")
		if err != nil {
			return 0, err
		}
		close(entered)
		<-release
		_, err = p.st.SQL().Exec(ctx, "INSERT INTO t VALUES('n', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", v+1)
		return v + 1, err
	})
	wait(c, entered, "the first handler")
	secondStarted := make(chan struct{})
	second := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		close(secondStarted)
		return p.incr(ctx, "n")
	})
	if !quiet(secondStarted, settle) {
		c.errorf("a second event ran while the first blocked without yielding")
	}
	close(release)
	r1, r2 := wait(c, first, "first"), wait(c, second, "second")
	if r1.err != nil || r2.err != nil {
		c.fatalf("calls failed: %v, %v", r1.err, r2.err)
	}
	if r1.v != 1 || r2.v != 2 {
		c.errorf("read-modify-write results %d, %d; want 1, 2 (an update was lost)", r1.v, r2.v)
	}

	// 2. Await yields: another event runs to completion meanwhile, and the
	// awaiting handler continues afterwards in a new turn.
	inAwait, resume := make(chan struct{}), make(chan struct{})
	awaiting := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		if _, err := p.incr(ctx, "a"); err != nil {
			return 0, err
		}
		_, err := cell.Await(ctx, func(ctx context.Context) (int, error) {
			close(inAwait)
			<-resume
			return 0, nil
		})
		if err != nil {
			return 0, err
		}
		return p.get(ctx, "b")
	})
	wait(c, inAwait, "the handler to enter Await")
	other := wait(c, callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		return p.incr(ctx, "b")
	}), "an event while another handler awaits (Await must yield the gate)")
	if other.err != nil {
		c.errorf("event during Await: %v", other.err)
	}
	close(resume)
	r := wait(c, awaiting, "the awaiting handler")
	if r.err != nil || r.v != 1 {
		c.errorf("after Await the handler read b=%d (err %v), want 1 (it continues after the other event)", r.v, r.err)
	}
}

// Waiters get the gate in arrival order, one at a time.
func caseFIFO(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "FIFO", nil)
	s := pc.stub("a")
	entered, release := make(chan struct{}), make(chan struct{})
	head := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		close(entered)
		<-release
		return 0, nil
	})
	wait(c, entered, "the first event")
	var mu sync.Mutex
	var order []int
	var running, maxRunning atomic.Int32
	const n = 8
	var results []<-chan result[int]
	for i := 1; i <= n; i++ {
		results = append(results, callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
			if r := running.Add(1); r > maxRunning.Load() {
				maxRunning.Store(r)
			}
			defer running.Add(-1)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			_, err := p.incr(ctx, "n")
			time.Sleep(time.Millisecond)
			return i, err
		}))
		c.eventually("event to queue", func() bool { return rt.Queued(s.Key()) == i })
	}
	close(release)
	wait(c, head, "the first event")
	for i, r := range results {
		if v := wait(c, r, "queued event"); v.err != nil {
			c.errorf("queued event %d: %v", i+1, v.err)
		}
	}
	want := []int{1, 2, 3, 4, 5, 6, 7, 8}
	if !slices.Equal(order, want) {
		c.errorf("events ran in order %v, want arrival order %v", order, want)
	}
	if m := maxRunning.Load(); m != 1 {
		c.errorf("%d handlers ran at once, want 1", m)
	}
}

// A stub call from inside a handler yields that handler.
func caseStubCallYields(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Caller", nil)
	a, b := pc.stub("a"), pc.stub("b")
	inB, releaseB := make(chan struct{}), make(chan struct{})
	outer := callAsync(c.ctx, a, func(ctx context.Context, p *probe) (int64, error) {
		if _, err := p.incr(ctx, "x"); err != nil {
			return 0, err
		}
		v, err := cell.Call(ctx, b, func(ctx context.Context, q *probe) (int64, error) {
			close(inB)
			<-releaseB
			return q.incr(ctx, "y")
		})
		if err != nil {
			return 0, err
		}
		x, err := p.get(ctx, "x")
		return v*10 + x, err
	})
	wait(c, inB, "the nested call to reach b")
	r := wait(c, callAsync(c.ctx, a, func(ctx context.Context, p *probe) (int64, error) {
		return p.incr(ctx, "x")
	}), "an event on a while a's handler calls b (the stub call must yield)")
	if r.err != nil {
		c.errorf("event on a during the nested call: %v", r.err)
	}
	close(releaseB)
	o := wait(c, outer, "the outer call")
	if o.err != nil || o.v != 12 {
		c.errorf("outer call returned %d (err %v), want 12 (b's 1, then a's x=2)", o.v, o.err)
	}
}

// Storage refuses contexts that do not belong to the turn holding the gate.
func caseNotInTurn(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "Turn", nil)
	s := pc.stub("a")
	var kept *probe
	must(c, s, "in-turn checks", func(ctx context.Context, p *probe) (int, error) {
		kept = p
		if _, err := p.st.SQL().Exec(context.Background(), "INSERT INTO t VALUES('bg', 1)"); !errors.Is(err, cell.ErrNotInTurn) {
			c.errorf("storage with a context from outside the handler returned %v, want ErrNotInTurn", err)
		}
		_, err := cell.Await(ctx, func(ctx context.Context) (int, error) {
			if _, _, err := p.st.KV().Get(ctx, "k"); !errors.Is(err, cell.ErrNotInTurn) {
				c.errorf("storage inside Await returned %v, want ErrNotInTurn", err)
			}
			return 0, nil
		})
		if err != nil {
			return 0, err
		}
		if err := p.st.KV().Put(ctx, "k", 1); err != nil {
			c.errorf("storage after Await returned: %v", err)
		}
		return 0, nil
	})
	if _, err := kept.st.SQL().Exec(c.ctx, "SELECT 1"); !errors.Is(err, cell.ErrNotInTurn) {
		c.errorf("storage outside any turn returned %v, want ErrNotInTurn", err)
	}
}

// Goroutines sharing a handler's context may call stubs at the same time:
// the handler's turn is yielded while any of them is out, and taken back
// when the last returns. A goroutine left running after the handler
// returned does not take the gate back.
func caseFanOut(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "FanOut", nil)
	a := pc.stub("a")
	const n = 3
	reached, release := make(chan struct{}, n), make(chan struct{})
	outer := callAsync(c.ctx, a, func(ctx context.Context, p *probe) (int64, error) {
		if _, err := p.incr(ctx, "x"); err != nil {
			return 0, err
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := cell.Call(ctx, pc.stub(fmt.Sprintf("leaf%d", i)), func(ctx context.Context, q *probe) (int64, error) {
					reached <- struct{}{}
					<-release
					return q.incr(ctx, "y")
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return 0, err
			}
		}
		return p.incr(ctx, "x") // the turn is back: storage works
	})
	for range n {
		wait(c, reached, "the fanned-out calls")
	}
	if r := wait(c, callAsync(c.ctx, a, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "x") }),
		"an event on a during the fan-out"); r.err != nil || r.v != 1 {
		c.errorf("event during the fan-out read x=%d (err %v), want 1", r.v, r.err)
	}
	close(release)
	if r := wait(c, outer, "the fanning-out call"); r.err != nil || r.v != 2 {
		c.errorf("the fanning-out handler returned (%d, %v), want (2, nil)", r.v, r.err)
	}

	// Fire and forget: the goroutine outlives the handler.
	inLeaf, leave := make(chan struct{}), make(chan struct{})
	must(c, a, "fire and forget", func(ctx context.Context, p *probe) (int, error) {
		go cell.Call(ctx, pc.stub("late"), func(ctx context.Context, q *probe) (int, error) {
			close(inLeaf)
			<-leave
			return 0, nil
		})
		<-inLeaf
		return 0, nil
	})
	close(leave)
	time.Sleep(settle) // let the late call come back
	if r := wait(c, callAsync(c.ctx, a, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "x") }),
		"an event after a goroutine outlived its handler (the gate must not be taken back)"); r.err != nil {
		c.errorf("event after fire-and-forget: %v", r.err)
	}
}
