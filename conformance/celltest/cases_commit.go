package celltest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
)

func commitCases() []caseDef {
	return []caseDef{
		{"commit/lease-checked-before-ack", caseLeaseCheckedBeforeAck},
		{"commit/ack-checked-when-already-durable", caseAckCheckedWhenAlreadyDurable},
		{"commit/no-capture", caseNoCaptureCommits},
		{"commit/synchronous-log", caseSynchronousLog},
	}
}

// The grant is checked when a turn commits and again before a reply that
// waited for commits leaves: a grant that refuses writes (fenced, though
// not yet reported lost) rolls the turn back and resets the object, or
// holds back the acknowledgement of a commit already in the log. A call
// that touches no storage and has no commit to wait for does not depend on
// the grant.
func caseLeaseCheckedBeforeAck(c *checkT) {
	log := c.controlLog()
	ls := newTestLease()
	rt := c.runtime(rtConfig{log: log, lease: ls})
	pc := c.probeClass(rt, "Fence", nil)
	s := pc.stub("a")
	incr := func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }
	get := func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") }
	must(c, s, "warm up", incr)
	fenced := errors.New("injected: the lease is past its deadline")

	// Fenced while the object is quiet: a call that touches no storage
	// still answers; a write is refused at commit and rolled back.
	ls.latest().fence(fenced)
	if v := must(c, s, "a call without storage while fenced", func(ctx context.Context, p *probe) (int64, error) { return 5, nil }); v != 5 {
		c.errorf("a call without storage while fenced returned %d, want 5", v)
	}
	if n := pc.built.Load(); n != 1 {
		c.errorf("a call without storage on a fenced grant reset the object (%d constructions, want 1)", n)
	}
	_, err := cell.Call(c.ctx, s, incr)
	if !isBroken(err) || !errors.Is(err, fenced) || !strings.Contains(err.Error(), "the write was refused") {
		c.errorf("a write on a fenced grant returned %v, want a BrokenObjectError: the write was refused", err)
	}
	if v := must(c, s, "a read after the refused write", get); v != 1 {
		c.errorf("after a refused write n reads %d, want 1 (the turn must be rolled back)", v)
	}

	// Fenced while the commit is in the log: the reply is not
	// acknowledged once it is durable.
	log.Hold()
	wrote := make(chan struct{})
	w := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) {
		defer close(wrote)
		return p.incr(ctx, "n")
	})
	wait(c, wrote, "the writing handler")
	ls.latest().fence(fenced)
	log.Release()
	if r := wait(c, w, "the write's reply"); !isBroken(r.err) || !errors.Is(r.err, fenced) {
		c.errorf("a write whose grant was fenced before it became durable returned (%d, %v), want a BrokenObjectError: the write was refused", r.v, r.err)
	}
}

// noCapture hides the driver's page capture, so the runtime takes the
// commit-time image path.
func noCapture(d driver.Driver) driver.Driver { return twinDriver{d, func(*twinConn) {}} }

// Without page capture the runtime tells from SQLite's counters whether a
// turn wrote anything (rows, schema, user_version) and hands exactly
// those turns to the log, each with the image as of its commit.
func caseNoCaptureCommits(c *checkT) {
	log := c.controlLog()
	log.NeedsImages = true
	rt := c.runtime(rtConfig{log: log, driver: noCapture(c.h.Driver)})
	pc := c.probeClass(rt, "NoCapture", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int, error) { return 0, nil })
	n := len(log.Commits(s.Key()))
	for _, st := range []struct {
		what  string
		write bool
		sql   string
	}{
		{"an insert", true, "INSERT INTO t(k, v) VALUES('a', 1)"},
		{"a read", false, "SELECT count(*) FROM t"},
		{"an update that matches no row", false, "UPDATE t SET v = 2 WHERE k = 'none'"},
		{"an update", true, "UPDATE t SET v = 2 WHERE k = 'a'"},
		{"a DDL statement alone", true, "CREATE INDEX t_v ON t(v)"},
		{"a user_version change alone", true, "PRAGMA user_version = 7"},
		{"a user_version read", false, "PRAGMA user_version"},
	} {
		must(c, s, st.what, func(ctx context.Context, p *probe) (int, error) {
			_, err := p.st.SQL().Exec(ctx, st.sql)
			return 0, err
		})
		got := len(log.Commits(s.Key()))
		switch {
		case st.write && got != n+1:
			c.errorf("%s (%s) handed %d commits to the log, want 1", st.what, st.sql, got-n)
		case !st.write && got != n:
			c.errorf("%s (%s) handed %d commits to the log, want none", st.what, st.sql, got-n)
		}
		n = got
	}
	commits := log.Commits(s.Key())
	for _, cm := range commits {
		if cm.Image == nil || cm.Pages != nil {
			c.errorf("commit %d: image %v, pages %v; want an image and no pages without capture", cm.Seq, cm.Image != nil, cm.Pages != nil)
		}
	}
	last := commits[len(commits)-1]
	conn, err := c.h.Driver.Open(c.ctx, driver.Config{})
	if err != nil {
		c.fatalf("open an in-memory database: %v", err)
	}
	defer conn.Close()
	if err := conn.Restore(c.ctx, last.Image); err != nil {
		c.fatalf("restore the last image: %v", err)
	}
	rows := c.rawRows(conn, "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema WHERE name = 't_v'), (SELECT v FROM t WHERE k = 'a')")
	if len(rows) != 1 || rows[0][0] != int64(7) || rows[0][1] != int64(1) || rows[0][2] != int64(2) {
		c.errorf("the last image holds user_version, index, v = %v, want [7 1 2]", rows)
	}
}

// syncLog makes each commit durable (or fails it) inside Append, as a log
// that writes synchronously does: the runtime gets futures already
// resolved.
type syncLog struct {
	mu  sync.Mutex
	err error
}

func (l *syncLog) failWith(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
}

func (l *syncLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	return syncCellLog{l}, nil
}

type syncCellLog struct{ l *syncLog }

func (syncCellLog) NeedsImage() bool                            { return false }
func (syncCellLog) Close(ctx context.Context, final bool) error { return nil }
func (c syncCellLog) Append(cm durability.Commit) durability.Durable {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return durability.Resolved(c.l.err)
}

// A log whose commits are already durable (or already failed) when
// Append returns: successes are acknowledged without a reset, a failure
// resets the object like one reported later.
func caseSynchronousLog(c *checkT) {
	log := &syncLog{}
	rt := c.runtime(rtConfig{log: log})
	pc := c.probeClass(rt, "Sync", nil)
	s := pc.stub("a")
	incr := func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }
	for i := int64(1); i <= 3; i++ {
		if v := must(c, s, "increment", incr); v != i {
			c.errorf("increment %d returned %d", i, v)
		}
	}
	if n := pc.built.Load(); n != 1 {
		c.errorf("commits that were durable at once reset the object (%d constructions, want 1)", n)
	}
	injected := errors.New("injected: synchronous write failed")
	log.failWith(injected)
	_, err := cell.Call(c.ctx, s, incr)
	if !isBroken(err) || !errors.Is(err, injected) || !strings.Contains(err.Error(), "a commit failed to become durable") {
		c.errorf("a write whose commit failed at once returned %v, want a BrokenObjectError: a commit failed to become durable", err)
	}
	log.failWith(nil)
	must(c, s, "a call after the reset", func(ctx context.Context, p *probe) (int, error) { return 0, nil })
	if n := pc.built.Load(); n != 2 {
		c.errorf("the object was constructed %d times, want 2 (the failed commit resets it)", n)
	}
}

// A commit already durable when its reply looks (a log that reports
// durability at Append, or one faster than the turn's end) is acknowledged
// only once the grant's acknowledgement check passes, as a commit the
// reply waits for is: the grant here accepts writes but refuses
// acknowledgements (as a fleet grant does once its re-read of the
// ownership record finds another owner), so every write is refused.
func caseAckCheckedWhenAlreadyDurable(c *checkT) {
	ls := newTestLease()
	rt := c.runtime(rtConfig{log: instantLog{}, lease: ls})
	pc := c.probeClass(rt, "InstantAck", nil)
	s := pc.stub("a")
	incr := func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") }
	must(c, s, "warm up", incr)
	refused := errors.New("injected: the ownership record names another node")
	ls.refuseAcks(refused)
	for i := range 3 { // each refusal resets the object: the next write runs on a new grant
		_, err := cell.Call(c.ctx, s, incr)
		if !isBroken(err) || !errors.Is(err, refused) {
			c.errorf("write %d, durable at once on a grant that refuses acknowledgements, returned %v; want a BrokenObjectError: the write was refused", i+1, err)
			return
		}
	}
}

// instantLog reports every commit durable as it is appended.
type instantLog struct{}

func (instantLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	return instantCellLog{}, nil
}

type instantCellLog struct{}

func (instantCellLog) NeedsImage() bool                            { return false }
func (instantCellLog) Append(durability.Commit) durability.Durable { return durability.Resolved(nil) }
func (instantCellLog) Close(context.Context, bool) error           { return nil }
