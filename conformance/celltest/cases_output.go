package celltest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/lease"
)

func outputCases() []caseDef {
	return []caseDef{
		{"output/held-until-durable", caseHeldUntilDurable},
		{"output/counter-64", caseCounter64},
		{"output/log-commits", caseLogCommits},
		{"output/log-told-capture", caseLogToldCapture},
		{"output/method-held-until-durable", caseMethodHeldUntilDurable},
	}
}

func resetCases() []caseDef {
	return []caseDef{
		{"reset/durability-failure", caseDurabilityFailure},
		{"reset/block-concurrency-while", caseBlockConcurrencyWhile},
		{"reset/block-concurrency-timeout", caseBlockConcurrencyTimeout},
		{"reset/lease-lost", caseLeaseLost},
		{"reset/constructor-error", caseConstructorError},
	}
}

func (c *checkT) controlLog() *ControlLog {
	l := NewControlLog()
	c.defer_(l.Stop)
	return l
}

// A reply waits for every commit made before it; later events keep
// running; a reply with nothing pending leaves at once.
func caseHeldUntilDurable(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Output", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })

	log.Hold()
	wrote := make(chan struct{})
	w := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		defer close(wrote)
		return p.incr(ctx, "n")
	})
	wait(c, wrote, "the writing handler")
	readRan := make(chan struct{})
	r := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		defer close(readRan)
		return p.get(ctx, "n")
	})
	wait(c, readRan, "a later event to run while the first reply waits (commits must pipeline)")
	if !quiet(w, settle) {
		c.errorf("a reply left before its commit was durable")
	}
	if !quiet(r, settle) {
		c.errorf("a read-only reply left while a commit made before it was not durable")
	}
	if !reachesLog(c, log) {
		c.errorf("the write reached no pending commit in the log")
	}
	log.Release()
	if v := wait(c, w, "the write's reply after durability"); v.err != nil || v.v != 2 {
		c.errorf("write reply %d (err %v), want 2", v.v, v.err)
	}
	if v := wait(c, r, "the read's reply after durability"); v.err != nil || v.v != 2 {
		c.errorf("read reply %d (err %v), want 2", v.v, v.err)
	}

	// Quiet object: a read-only reply does not wait for the held log.
	log.Hold()
	q := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if v := wait(c, q, "a read-only reply on a quiet object"); v.err != nil || v.v != 2 {
		c.errorf("read-only reply %d (err %v), want 2", v.v, v.err)
	}
	log.Release()
}

// 64 concurrent increments of one counter: distinct, gap-free values, and
// no reply before its commit is durable.
func caseCounter64(c *checkT) {
	log := c.controlLog()
	log.SetDelay(200 * time.Microsecond)
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Counter", nil)
	s := pc.stub("counter")
	const n = 64
	type reply struct {
		v, appendedBefore, durableAtReply uint64
		err                               error
	}
	out := make(chan reply, n)
	var start sync.WaitGroup
	start.Add(1)
	for range n {
		go func() {
			start.Wait()
			var before uint64
			v, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
				before = log.Appended()
				return p.incr(ctx, "n")
			})
			out <- reply{uint64(v), before, log.Durable(), err}
		}()
	}
	start.Done()
	var got []uint64
	for range n {
		r := wait(c, out, "the counter replies")
		if r.err != nil {
			c.errorf("increment: %v", r.err)
			continue
		}
		if r.durableAtReply < r.appendedBefore+1 {
			c.errorf("value %d was replied with %d commits durable, but its commit was at least number %d", r.v, r.durableAtReply, r.appendedBefore+1)
		}
		got = append(got, r.v)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != uint64(i+1) {
			c.errorf("values %v are not 1..%d without gaps or repeats", got, n)
			break
		}
	}
}

// A commit that fails to become durable resets the object: its caller and
// every reply waiting behind it get BrokenObjectError; the next call
// builds a fresh instance.
func caseDurabilityFailure(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Durable", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	log.Hold()
	wrote := make(chan struct{})
	w := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		defer close(wrote)
		return p.incr(ctx, "n")
	})
	wait(c, wrote, "the write")
	readRan := make(chan struct{})
	r := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		defer close(readRan)
		return p.get(ctx, "n")
	})
	wait(c, readRan, "the read")
	log.Fail(errors.New("injected durability failure"))
	for _, ch := range []<-chan result[int64]{w, r} {
		v := wait(c, ch, "a reply after the failure")
		if !isBroken(v.err) {
			c.errorf("a reply waiting on a failed commit returned (%d, %v), want a BrokenObjectError", v.v, v.err)
		} else if !strings.Contains(v.err.Error(), "durable") {
			c.errorf("reset message %q does not say a commit failed to become durable", v.err)
		}
	}
	log.Release()
	if _, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }); err != nil {
		c.errorf("the call after a reset failed: %v", err)
	}
	if g := pc.built.Load(); g != 2 {
		c.errorf("the object was constructed %d times, want 2", g)
	}
}

// BlockConcurrencyWhile keeps the gate across yields, and its failure or
// panic resets the object.
func caseBlockConcurrencyWhile(c *checkT) {
	rt := c.runtime(rtConfig{})
	var attempt int
	pc := c.probeClass(rt, "BCW", func(ctx context.Context, p *probe) error {
		attempt++
		n := attempt
		return p.st.BlockConcurrencyWhile(ctx, func(ctx context.Context) error {
			switch n {
			case 1:
				return errors.New("initialisation failed")
			case 2:
				panic("initialisation panicked")
			}
			_, err := p.incr(ctx, "init")
			return err
		})
	})
	s := pc.stub("a")
	for i, want := range []string{"failed", "panicked"} {
		_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) { return 0, nil })
		if !isBroken(err) || !strings.Contains(err.Error(), "blockConcurrencyWhile") || !strings.Contains(err.Error(), want) {
			c.errorf("call %d after a constructor's BlockConcurrencyWhile %s returned %v, want a BrokenObjectError naming it", i+1, want, err)
		}
	}
	v := must(c, s, "call after the resets", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "init") })
	if v != 1 {
		c.errorf("the third construction's write reads %d, want 1", v)
	}

	// The gate is kept across a yield inside BlockConcurrencyWhile.
	inAwait, resume := make(chan struct{}), make(chan struct{})
	blocker := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		err := p.st.BlockConcurrencyWhile(ctx, func(ctx context.Context) error {
			_, err := cell.Await(ctx, func(ctx context.Context) (int, error) {
				close(inAwait)
				<-resume
				return 0, nil
			})
			return err
		})
		return 0, err
	})
	wait(c, inAwait, "BlockConcurrencyWhile's Await")
	otherRan := make(chan struct{})
	other := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		close(otherRan)
		return 0, nil
	})
	if !quiet(otherRan, settle) {
		c.errorf("an event ran while BlockConcurrencyWhile was yielded")
	}
	close(resume)
	if r := wait(c, blocker, "the blocking call"); r.err != nil {
		c.errorf("BlockConcurrencyWhile with a successful callback: %v", r.err)
	}
	if r := wait(c, other, "the event after BlockConcurrencyWhile"); r.err != nil {
		c.errorf("the event after BlockConcurrencyWhile: %v", r.err)
	}
}

// A BlockConcurrencyWhile callback that does not return within the limit
// (30 s by default, on the runtime's clock) resets the object: the caller
// queued behind it gets a BrokenObjectError saying so, the next call
// reaches a fresh instance, and the hung callback can no longer write.
func caseBlockConcurrencyTimeout(c *checkT) {
	clk := clock.NewFake(epoch)
	rt := c.runtime(rtConfig{clock: clk})
	var attempt atomic.Int32
	hung, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	c.defer_(release)
	lateWrite := make(chan error, 1)
	pc := c.probeClass(rt, "BCWLimit", func(ctx context.Context, p *probe) error {
		if attempt.Add(1) > 1 {
			return nil
		}
		return p.st.BlockConcurrencyWhile(ctx, func(ctx context.Context) error {
			close(hung)
			<-unblock
			_, err := p.incr(ctx, "late")
			lateWrite <- err
			return err
		})
	})
	s := pc.stub("a")
	first := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	wait(c, hung, "the constructor's BlockConcurrencyWhile callback")
	limit := epoch.Add(cell.DefaultBlockConcurrencyTimeout)
	if at, ok := clk.NextDeadline(); !ok || !at.Equal(limit) {
		c.fatalf("while a BlockConcurrencyWhile callback runs the next timer is at %v (set %v), want the %v limit", at.Sub(epoch), ok, cell.DefaultBlockConcurrencyTimeout)
	}
	clk.Advance(cell.DefaultBlockConcurrencyTimeout - time.Millisecond)
	if !quiet(first, settle) {
		c.errorf("the queued call returned before the BlockConcurrencyWhile limit")
	}
	clk.Advance(time.Millisecond)
	r := wait(c, first, "the call queued behind a BlockConcurrencyWhile past its limit")
	var te *cell.BlockConcurrencyTimeoutError
	if !isBroken(r.err) || !errors.As(r.err, &te) || !strings.Contains(r.err.Error(), "blockConcurrencyWhile() did not finish within 30s") {
		c.errorf("the queued call returned (%d, %v), want a BrokenObjectError: Durable Object reset because blockConcurrencyWhile() did not finish within 30s", r.v, r.err)
	}
	if v := must(c, s, "a call after the reset", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }); v != 1 {
		c.errorf("the call after the reset read %d, want 1", v)
	}
	release()
	if err := wait(c, lateWrite, "the hung callback to go on"); err == nil {
		c.errorf("the hung callback could still write after the object was reset")
	}
	if v := must(c, s, "read the hung callback's write", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "late") }); v != 0 {
		c.errorf("the hung callback's write reads %d, want 0 (it was refused)", v)
	}
	if n := pc.built.Load(); n != 2 {
		c.errorf("the object was constructed %d times, want 2", n)
	}

	// A configured limit, in a handler's BlockConcurrencyWhile.
	clk2 := clock.NewFake(epoch)
	rt2 := c.runtime(rtConfig{clock: clk2, bcw: 5 * time.Second})
	s2 := c.probeClass(rt2, "BCWLimit5", nil).stub("a")
	inBCW, hold := make(chan struct{}), make(chan struct{})
	c.defer_(func() { close(hold) })
	blocker := callAsync(c.ctx, s2, func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.BlockConcurrencyWhile(ctx, func(ctx context.Context) error {
			close(inBCW)
			<-hold
			return nil
		})
	})
	wait(c, inBCW, "a handler's BlockConcurrencyWhile callback")
	queued := callAsync(c.ctx, s2, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	c.eventually("a call to queue behind BlockConcurrencyWhile", func() bool { return rt2.Queued(s2.Key()) == 1 })
	if at, ok := clk2.NextDeadline(); !ok || !at.Equal(epoch.Add(5*time.Second)) {
		c.fatalf("with BlockConcurrencyTimeout 5s the next timer is at %v (set %v), want 5s", at.Sub(epoch), ok)
	}
	clk2.Advance(5 * time.Second)
	if r := wait(c, queued, "the call queued behind the handler's BlockConcurrencyWhile"); !isBroken(r.err) || !strings.Contains(r.err.Error(), "did not finish within 5s") {
		c.errorf("the queued call returned (%d, %v), want a BrokenObjectError: blockConcurrencyWhile() did not finish within 5s", r.v, r.err)
	}
	select {
	case r := <-blocker:
		c.errorf("the hung handler returned (%v) before its callback did", r.err)
	default:
	}
}

// A lost lease breaks the instance: queued callers get BrokenObjectError
// and the next call takes the lease again.
func caseLeaseLost(c *checkT) {
	ls := newTestLease()
	rt := c.runtime(rtConfig{lease: ls})
	pc := c.probeClass(rt, "Leased", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	entered, release := make(chan struct{}), make(chan struct{})
	running := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		close(entered)
		<-release
		return p.incr(ctx, "n")
	})
	wait(c, entered, "the running handler")
	queued := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	c.eventually("the second call to queue", func() bool { return rt.Queued(s.Key()) == 1 })
	ls.revokeAll(errors.New("lease taken over"))
	if r := wait(c, queued, "the queued call"); !isBroken(r.err) || !strings.Contains(r.err.Error(), "lease") {
		c.errorf("a queued call after the lease was lost returned (%d, %v), want a BrokenObjectError about the lease", r.v, r.err)
	}
	close(release)
	if r := wait(c, running, "the running call"); !isBroken(r.err) {
		c.errorf("the running call after the lease was lost returned (%d, %v), want a BrokenObjectError", r.v, r.err)
	}
	v := must(c, s, "call with a new lease", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if v != 1 {
		c.errorf("after the reset n=%d, want 1 (the write of the broken turn must not commit)", v)
	}
	if n := ls.acquired(); n != 2 {
		c.errorf("the lease was acquired %d times, want 2", n)
	}
}

// testLease grants every cell and can revoke the grants.
type testLease struct {
	// bucketWins is what every grant's BucketWins reports.
	bucketWins bool

	mu       sync.Mutex
	grants   []*testGrant
	failNext int
	failErr  error
	// ackRefused is given to every new grant (refuseAcks).
	ackRefused error
}

// fail makes the next n acquisitions fail with err.
func (l *testLease) fail(n int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failNext, l.failErr = n, err
}

func newTestLease() *testLease { return &testLease{} }

// refuseAcks makes every grant, present and future, accept writes but
// refuse to acknowledge them.
func (l *testLease) refuseAcks(err error) {
	l.mu.Lock()
	l.ackRefused = err
	gs := slices.Clone(l.grants)
	l.mu.Unlock()
	for _, g := range gs {
		g.refuseAck(err)
	}
}

// latest is the newest grant.
func (l *testLease) latest() *testGrant {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.grants) == 0 {
		return nil
	}
	return l.grants[len(l.grants)-1]
}

func (l *testLease) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failNext > 0 {
		l.failNext--
		return nil, l.failErr
	}
	g := &testGrant{epoch: uint64(len(l.grants) + 1), bucketWins: l.bucketWins, lost: make(chan struct{}), ackRefused: l.ackRefused}
	l.grants = append(l.grants, g)
	return g, nil
}

func (l *testLease) acquired() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.grants)
}

func (l *testLease) revokeAll(err error) {
	l.mu.Lock()
	gs := slices.Clone(l.grants)
	l.mu.Unlock()
	for _, g := range gs {
		g.end(err)
	}
}

type testGrant struct {
	epoch      uint64
	bucketWins bool
	once       sync.Once
	lost       chan struct{}
	mu         sync.Mutex
	err        error
	fenced     error // CheckWrite refuses with it, Lost stays open (a self-fence)
	ackRefused error // CheckAck refuses with it (lease.AckChecker)
}

// refuseAck makes the grant accept writes but refuse to acknowledge them.
func (g *testGrant) refuseAck(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ackRefused = err
}

// CheckAck is the acknowledgement check (lease.AckChecker).
func (g *testGrant) CheckAck(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ackRefused
}

// fence makes the grant refuse writes without reporting it lost, as a
// grant past its deadline does until its watcher notices.
func (g *testGrant) fence(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fenced = err
}

func (g *testGrant) end(err error) {
	g.once.Do(func() {
		g.mu.Lock()
		g.err = err
		g.mu.Unlock()
		close(g.lost)
	})
}

func (g *testGrant) Epoch() uint64         { return g.epoch }
func (g *testGrant) BucketWins() bool      { return g.bucketWins }
func (g *testGrant) Lost() <-chan struct{} { return g.lost }
func (g *testGrant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
func (g *testGrant) CheckWrite() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fenced != nil {
		return g.fenced
	}
	return g.err
}
func (g *testGrant) Release(ctx context.Context) error { g.end(lease.ErrReleased); return nil }

// The runtime tells the log, in its OpenRequest, whether pages are
// captured, and keeps its word: they are exactly when the driver captures
// pages (the log is not Local), and then every commit the log gets carries
// its pages; otherwise none does.
func caseLogToldCapture(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Capture", nil)
	s := pc.stub("a")
	for i := 1; i <= 3; i++ {
		must(c, s, "increment", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	}
	opens := log.Opens(s.Key())
	if len(opens) != 1 {
		c.fatalf("the cell's log was opened %d times, want 1", len(opens))
	}
	want := c.h.Driver.Capabilities().PageCapture
	if got := opens[0].PagesCaptured; got != want {
		c.errorf("the log was opened with PagesCaptured %v; the driver captures pages: %v", got, want)
	}
	commits := log.Commits(s.Key())
	if len(commits) < 3 {
		c.fatalf("only %d commits reached the log", len(commits))
	}
	for _, cm := range commits {
		if (cm.Pages != nil) != opens[0].PagesCaptured {
			c.errorf("commit %d carries pages: %v; the log was told PagesCaptured %v", cm.Seq, cm.Pages != nil, opens[0].PagesCaptured)
		}
	}
}

// The log gets every write commit, in order and numbered without gaps, and
// nothing for read-only turns. Without page capture, each commit carries
// the image as of that commit (never a later one).
func caseLogCommits(c *checkT) {
	log := c.controlLog()
	log.NeedsImages = true
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Commits", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int, error) { return 0, nil })
	before := len(log.Commits(s.Key()))
	for i := 1; i <= 3; i++ {
		must(c, s, "increment", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
		if got := len(log.Commits(s.Key())); got <= before {
			c.errorf("increment %d reached the log with no commit", i)
		} else {
			before = got
		}
		must(c, s, "read", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
		if got := len(log.Commits(s.Key())); got != before {
			c.errorf("a read-only turn handed %d commits to the log", got-before)
			before = got
		}
	}
	commits := log.Commits(s.Key())
	for i, cm := range commits {
		if cm.Seq != uint64(i+1) {
			c.errorf("commit %d has Seq %d, want %d (in order, without gaps)", i, cm.Seq, i+1)
		}
		if cm.Pages == nil && cm.Image == nil {
			c.errorf("commit %d carries neither pages nor an image, though the log asked for images", cm.Seq)
		}
	}
	if c.h.Driver.Capabilities().PageCapture {
		return
	}
	// Each of the last three commits' image shows its own increment.
	if len(commits) < 3 {
		c.fatalf("only %d commits", len(commits))
	}
	for i, cm := range commits[len(commits)-3:] {
		conn, err := c.h.Driver.Open(c.ctx, driver.Config{})
		if err != nil {
			c.fatalf("open an in-memory database: %v", err)
		}
		if err := conn.Restore(c.ctx, cm.Image); err != nil {
			conn.Close()
			c.fatalf("restore commit %d's image: %v", cm.Seq, err)
		}
		rows := c.rawRows(conn, "SELECT v FROM t WHERE k = 'n'")
		conn.Close()
		if len(rows) != 1 || rows[0][0] != int64(i+1) {
			c.errorf("commit %d's image holds n=%v, want %d (the image must be taken at commit time)", cm.Seq, rows, i+1)
		}
	}
}

// A constructor that fails makes the call fail with an ActivationError;
// the next call constructs again.
func caseConstructorError(c *checkT) {
	rt := c.runtime(rtConfig{})
	var attempt atomic.Int32
	pc := c.probeClass(rt, "Ctor", func(ctx context.Context, p *probe) error {
		if attempt.Add(1) == 1 {
			return errors.New("not yet")
		}
		return nil
	})
	s := pc.stub("a")
	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) { return 0, nil })
	var ae *cell.ActivationError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "not yet") {
		c.errorf("a call to an object whose constructor failed returned %v, want a *cell.ActivationError carrying the error", err)
	}
	if _, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }); err != nil {
		c.errorf("the call after a failed construction: %v", err)
	}
}

// A typed method call (cell.RegisterMethod) has a request's gates: its
// reply, and the error it returned (its writes committed), wait for every
// commit made before them.
func caseMethodHeldUntilDurable(c *checkT) {
	log := c.controlLog()
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Method", nil)
	entered := make(chan struct{}, 2)
	incr, err := cell.RegisterMethod(pc.ns, "incr", func(ctx context.Context, p *probe, k string) (int64, error) {
		v, err := p.incr(ctx, k)
		entered <- struct{}{}
		return v, err
	})
	if err != nil {
		c.fatalf("RegisterMethod(incr): %v", err)
	}
	refuse, err := cell.RegisterMethod(pc.ns, "refuse", func(ctx context.Context, p *probe, k string) (int64, error) {
		if _, err := p.incr(ctx, k); err != nil {
			return 0, err
		}
		entered <- struct{}{}
		return 0, errors.New("refused after writing")
	})
	if err != nil {
		c.fatalf("RegisterMethod(refuse): %v", err)
	}
	s := pc.stub("a")
	if v, err := incr.Call(c.ctx, s, "n"); err != nil || v != 1 {
		c.fatalf("warm up: %d %v", v, err)
	}
	<-entered

	log.Hold()
	async := func(m *cell.Method[*probe, string, int64]) <-chan result[int64] {
		ch := make(chan result[int64], 1)
		go func() {
			v, err := m.Call(c.ctx, s, "n")
			ch <- result[int64]{v, err}
		}()
		return ch
	}
	w := async(incr)
	wait(c, entered, "the method that writes")
	f := async(refuse)
	wait(c, entered, "the method that writes and returns an error")
	if !quiet(w, settle) {
		c.errorf("a method's reply left before its commit was durable")
	}
	if !quiet(f, settle) {
		c.errorf("a method's error left before its commit was durable")
	}
	log.Release()
	if v := wait(c, w, "the method's reply after durability"); v.err != nil || v.v != 2 {
		c.errorf("method reply %d (err %v), want 2", v.v, v.err)
	}
	var me *cell.MethodError
	if v := wait(c, f, "the method's error after durability"); !errors.As(v.err, &me) || me.Message != "refused after writing" {
		c.errorf("method error %v (%T), want a *cell.MethodError saying refused after writing", v.err, v.err)
	}
	if v := must(c, s, "read back", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }); v != 3 {
		c.errorf("after both methods n = %d, want 3 (a method's error keeps its writes)", v)
	}
}
