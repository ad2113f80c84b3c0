package celltest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store/memstore"
)

// Restores on the next session (issue 23): State.RestoreBookmarkOnNextSession
// on the LTX log.
func restoreNextCases() []caseDef {
	return []caseDef{
		{"storage/restore-bookmark", func(c *checkT) { caseRestoreBookmark(c, modeShard) }},
		{"storage/restore-bookmark-fleet", func(c *checkT) { caseRestoreBookmark(c, modeFleet) }},
		{"storage/restore-bookmark-nodelog", func(c *checkT) { caseRestoreBookmark(c, modeNodeLog) }},
		{"storage/restore-bookmark-crash", caseRestoreBookmarkCrash},
		{"storage/restore-bookmark-epoch", caseRestoreBookmarkEpoch},
		{"storage/restore-bookmark-errors", caseRestoreBookmarkErrors},
	}
}

// restoreMode is where a restore case's cell runs.
type restoreMode int

const (
	modeShard   restoreMode = iota // single-host shard locks (local primary)
	modeFleet                      // a fleet node's ownership (the bucket wins)
	modeNodeLog                    // the same, with the node's node log
)

// restoreEnv is one case's bucket, clock and LTX log.
type restoreEnv struct {
	c      *checkT
	bucket *gateStore
	clk    *clock.Fake
	dir    string // the runtimes' data directory (local primary)
	fleet  *fleet.Node
	nl     *nodelog.Log // with modeNodeLog
}

func newRestoreEnv(c *checkT) *restoreEnv {
	return &restoreEnv{c: c, bucket: newGateStore(memstore.New()),
		clk: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), dir: filepath.Join(c.dir, "restore")}
}

func (e *restoreEnv) log() durability.Log {
	l, err := ltxlog.New(ltxlog.Options{Store: e.bucket, Clock: e.clk, Logger: quietLogger(), CompactAfter: -1,
		UploadRetries: -1, RetryDelay: time.Millisecond, NodeLog: e.nl})
	if err != nil {
		e.c.fatalf("open the LTX log: %v", err)
	}
	return l
}

// lease is single-host shard locks on the data directory (local primary:
// the local file is the primary copy, as under cellb serve), or a fleet
// node's ownership (the bucket wins).
func (e *restoreEnv) lease(bucketWins bool) lease.Lease {
	return e.leaseIn(bucketWins, "shards")
}

// join makes the case's fleet node (with a node log when nodeLog): every
// take moves the cell's own.json to a new epoch above the log's newest.
// Call it before the first log.
func (e *restoreEnv) join(nodeLog bool) {
	n, err := fleet.Join(e.c.ctx, fleet.Options{Store: e.bucket, Node: "restorer", Logger: quietLogger(), NodeLog: nodeLog})
	if err != nil {
		e.c.fatalf("fleet.Join: %v", err)
	}
	e.c.defer_(n.Kill)
	e.fleet = n
	if nodeLog {
		nl, err := nodelog.New(nodelog.Options{Store: e.bucket, Node: n.ID(), Generation: n.Generation(), Confirmer: n, Logger: quietLogger(), Clock: e.clk})
		if err != nil {
			e.c.fatalf("nodelog.New: %v", err)
		}
		e.c.defer_(func() { nl.Close(context.Background(), false) })
		e.nl = nl
	}
}

func (e *restoreEnv) leaseIn(bucketWins bool, shards string) lease.Lease {
	if bucketWins {
		if e.fleet == nil {
			e.join(false)
		}
		return e.fleet
	}
	ls, err := shard.Open(filepath.Join(e.dir, shards), 4)
	if err != nil {
		e.c.fatalf("shard.Open: %v", err)
	}
	e.c.defer_(func() { ls.Close() })
	return ls
}

// pending reports whether the bucket holds the cell's restore request.
func (e *restoreEnv) pending(key string) bool {
	return slices.Contains(e.bucket.objects(e.c, layout.CellPrefix(key)), layout.RestoreRequestKey(key))
}

// set makes row "n" of t hold v.
func set(ctx context.Context, p *probe, v int64) error {
	_, err := p.st.SQL().Exec(ctx, "INSERT INTO t(k, v) VALUES('n', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", v)
	return err
}

// bookmarkAfter sets n to v and returns the bookmark of that state.
func bookmarkAfter(c *checkT, s *cell.Stub[*probe], v int64) string {
	return must(c, s, "write and take a bookmark", func(ctx context.Context, p *probe) (string, error) {
		if err := set(ctx, p, v); err != nil {
			return "", err
		}
		return p.st.CurrentBookmark(ctx)
	})
}

// restoreAndAbort asks for b on the next session, checks the running
// object still reads its current state, and restarts it with Abort; it
// returns the undo bookmark.
func restoreAndAbort(c *checkT, s *cell.Stub[*probe], b string, current int64) string {
	undo := must(c, s, "RestoreBookmarkOnNextSession", func(ctx context.Context, p *probe) (string, error) {
		u, err := p.st.RestoreBookmarkOnNextSession(ctx, b)
		if err != nil {
			return "", err
		}
		if v, err := p.get(ctx, "n"); err != nil || v != current {
			c.errorf("right after the request the object reads n = %d, %v; want %d (the restore waits for the next session)", v, err, current)
		}
		return u, nil
	})
	if _, err := durability.ParseBookmark(undo); err != nil {
		c.errorf("the undo bookmark %q: %v", undo, err)
	}
	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		p.st.Abort(ctx, "restore the bookmark")
		return 0, nil
	})
	var broken *cell.BrokenObjectError
	if !errors.As(err, &broken) {
		c.fatalf("Abort: %v, want a *cell.BrokenObjectError", err)
	}
	return undo
}

func readN(c *checkT, s *cell.Stub[*probe], what string) int64 {
	return must(c, s, what, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
}

// Write 5, take a bookmark, write 8, restore the bookmark on the next
// session and Abort: the next call reads 5, in a new instance and a newer
// epoch, with no alarm (alarms are not restored: neither the bookmarked
// state's nor the current one is kept), and the request is gone
// from the bucket (and, local-primary, its mark from beside the database).
// Write 6; the undo bookmark brings back 8, and the undo of that undo 6.
func caseRestoreBookmark(c *checkT, mode restoreMode) {
	e := newRestoreEnv(c)
	bucketWins := mode != modeShard
	if mode == modeNodeLog {
		e.join(true)
	}
	rt := c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(bucketWins), clock: e.clk})
	pc := c.probeClass(rt, "Restore", nil)
	s := pc.stub("a")

	// The bookmarked state has an alarm, the current one another: the
	// restored session has neither.
	must(c, s, "set an alarm", func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.SetAlarm(ctx, e.clk.Now().Add(time.Hour))
	})
	b5 := bookmarkAfter(c, s, 5)
	e.clk.Advance(time.Second)
	must(c, s, "move the alarm", func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.SetAlarm(ctx, e.clk.Now().Add(2*time.Hour))
	})
	b8 := bookmarkAfter(c, s, 8)
	undo := restoreAndAbort(c, s, b5, 8)
	if undo < b8 {
		c.errorf("the undo bookmark %q sorts before the state it should name, %q", undo, b8)
	}
	if got := readN(c, s, "read after the restore"); got != 5 {
		c.errorf("after restoring the bookmark of n = 5 and Abort, n = %d", got)
	}
	if g := pc.built.Load(); g != 2 {
		c.errorf("the object was built %d times, want 2 (Abort restarts it)", g)
	}
	type alarmOut struct {
		ok   bool
		bm   string
		err1 error
	}
	ao := must(c, s, "the alarm and bookmark after the restore", func(ctx context.Context, p *probe) (alarmOut, error) {
		_, ok, err := p.st.GetAlarm(ctx)
		if err != nil {
			return alarmOut{}, err
		}
		bm, err := p.st.CurrentBookmark(ctx)
		return alarmOut{ok: ok, bm: bm}, err
	})
	if ao.ok {
		c.errorf("the restored session has an alarm: alarms are not restored (the restored session starts with none)")
	}
	if !(ao.bm > undo) {
		c.errorf("the restored state's bookmark %q does not sort after the undo bookmark %q (a new epoch)", ao.bm, undo)
	}
	key := s.Key()
	c.eventually("the restore request to leave the bucket", func() bool { return !e.pending(key) })
	if !bucketWins {
		path, err := cell.DatabasePath(e.dir, key)
		if err != nil {
			c.fatalf("%v", err)
		}
		c.eventually("the restore mark to leave the data directory", func() bool {
			_, err := os.Stat(path + "-restore")
			return errors.Is(err, os.ErrNotExist)
		})
	}

	must(c, s, "write once", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	undo2 := restoreAndAbort(c, s, undo, 6)
	if got := readN(c, s, "read after restoring the undo bookmark"); got != 8 {
		c.errorf("after restoring the undo bookmark, n = %d, want 8", got)
	}
	restoreAndAbort(c, s, undo2, 8)
	if got := readN(c, s, "read after undoing the undo"); got != 6 {
		c.errorf("after restoring the second undo bookmark, n = %d, want 6", got)
	}
	// That state has no alarm, and the session has only read: the
	// request still goes (the session writes its snapshot at once).
	c.eventually("the restore request to leave the bucket without a write", func() bool { return !e.pending(key) })
	// The same again on a restarted runtime (the request crosses
	// processes).
	b6 := must(c, s, "bookmark", func(ctx context.Context, p *probe) (string, error) { return p.st.CurrentBookmark(ctx) })
	must(c, s, "write", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	must(c, s, "request", func(ctx context.Context, p *probe) (string, error) { return p.st.RestoreBookmarkOnNextSession(ctx, b6) })
	c.closeRuntime(rt)
	rt = c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(bucketWins), clock: e.clk})
	s = c.probeClass(rt, "Restore", nil).stub("a")
	if got := readN(c, s, "read on a new runtime"); got != 6 {
		c.errorf("a request made before the runtime closed: n = %d on the next runtime, want 6", got)
	}
}

// A crash after the restored session started and before its epoch's
// snapshot of the restored state is stored restores the bookmark again
// (the request is kept until then), never the state before the request.
func caseRestoreBookmarkCrash(c *checkT) {
	e := newRestoreEnv(c)
	rt := c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(false), clock: e.clk})
	s := c.probeClass(rt, "Restore", nil).stub("a")
	b5 := bookmarkAfter(c, s, 5)
	bookmarkAfter(c, s, 8)
	restoreAndAbort(c, s, b5, 8)

	e.bucket.hold() // the restored session's snapshot waits
	res := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	c.eventually("the restored session to start", func() bool { return slices.Contains(rt.ActiveCells(), s.Key()) })
	rt.EvictAll() // the crash
	e.bucket.fail(errors.New("the node crashed"))
	r := <-res
	if r.err == nil && r.v != 5 {
		c.errorf("the call in the crashed session read n = %d", r.v)
	}
	c.closeRuntime(rt)
	e.bucket.heal()
	if !e.pending(s.Key()) {
		c.errorf("the restore request was dropped before the restored session's snapshot was stored")
	}
	rt = c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(false), clock: e.clk})
	s = c.probeClass(rt, "Restore", nil).stub("a")
	if got := readN(c, s, "read after the crash"); got != 5 {
		c.errorf("after a crash before the restored snapshot was stored, n = %d, want 5 (the bookmark restored again)", got)
	}
	c.eventually("the restore request to leave the bucket", func() bool { return !e.pending(s.Key()) })
	if got := readN(c, s, "read again"); got != 5 {
		c.errorf("n = %d, want 5", got)
	}
}

// Every bad request fails at once with its typed error and records
// nothing: a text that is no bookmark, the zero bookmark, a state after
// the current one, a TXID that ends no file, an epoch the bucket no longer
// holds, a cell under lease.None, a log without bookmarks.
func caseRestoreBookmarkErrors(c *checkT) {
	e := newRestoreEnv(c)
	rt := c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(false), clock: e.clk})
	s := c.probeClass(rt, "Restore", nil).stub("a")
	b1 := bookmarkAfter(c, s, 1)
	_, _ = cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		p.st.Abort(ctx, "a new epoch")
		return 0, nil
	})
	b2 := bookmarkAfter(c, s, 2)
	cur := bookmarkAfter(c, s, 3)
	pcur, _ := durability.ParseBookmark(cur)
	pb1, _ := durability.ParseBookmark(b1)
	ask := func(b string) error {
		return must(c, s, "request "+b, func(ctx context.Context, p *probe) (error, error) {
			_, err := p.st.RestoreBookmarkOnNextSession(ctx, b)
			return err, nil
		})
	}
	var syn *durability.BookmarkSyntaxError
	if err := ask("yesterday"); !errors.As(err, &syn) {
		c.errorf("a text that is no bookmark: %v, want a *durability.BookmarkSyntaxError", err)
	}
	var nr *durability.BookmarkNotRestorableError
	if err := ask(durability.Bookmark{}.String()); !errors.As(err, &nr) || !errors.Is(err, durability.ErrEmptyBookmark) {
		c.errorf("the zero bookmark: %v, want a *durability.BookmarkNotRestorableError (ErrEmptyBookmark)", err)
	}
	var fut *durability.BookmarkInFutureError
	for _, b := range []durability.Bookmark{{Epoch: pcur.Epoch, TXID: pcur.TXID + 1}, {Epoch: pcur.Epoch + 1, TXID: 1}} {
		if err := ask(b.String()); !errors.As(err, &fut) || fut.Current != cur {
			c.errorf("bookmark %s after the current %s: %v, want a *durability.BookmarkInFutureError", b, cur, err)
		}
	}
	if err := ask(durability.Bookmark{Epoch: pb1.Epoch, TXID: pb1.TXID + 50}.String()); !errors.As(err, &nr) {
		c.errorf("a TXID its epoch never reached: %v, want a *durability.BookmarkNotRestorableError", err)
	}
	// The older epoch leaves the bucket (a retention window passed).
	old := e.bucket.objects(c, ltx.EpochPrefix(s.Key(), pb1.Epoch))
	for _, k := range old {
		if err := e.bucket.Delete(c.ctx, k); err != nil {
			c.fatalf("delete %s: %v", k, err)
		}
	}
	var enr *ltxlog.EpochNotRestorableError
	if err := ask(b1); !errors.As(err, &nr) || !errors.As(err, &enr) {
		c.errorf("a bookmark of an epoch the bucket no longer holds: %v, want a *durability.BookmarkNotRestorableError", err)
	}
	// The local mark cannot be written (a directory is in its way): the
	// request fails and nothing is recorded, since a request in the
	// bucket without its mark would wait there unseen by the local file.
	path, err := cell.DatabasePath(e.dir, s.Key())
	if err != nil {
		c.fatalf("%v", err)
	}
	if err := os.MkdirAll(filepath.Join(path+"-restore", "x"), 0o755); err != nil {
		c.fatalf("%v", err)
	}
	if err := ask(b2); err == nil {
		c.errorf("a request whose local mark could not be written succeeded")
	}
	os.RemoveAll(path + "-restore")
	if e.pending(s.Key()) {
		c.errorf("a refused request left a record in the bucket")
	}
	_, _ = cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		p.st.Abort(ctx, "restart")
		return 0, nil
	})
	if got := readN(c, s, "read after the refused requests"); got != 3 {
		c.errorf("after refused requests and a restart, n = %d, want 3", got)
	}

	// lease.None: every session is epoch 0.
	rtNone := c.runtime(rtConfig{log: e.log(), clock: e.clk})
	sn := c.probeClass(rtNone, "Restore", nil).stub("none")
	bn := bookmarkAfter(c, sn, 1)
	must(c, sn, "request under lease.None", func(ctx context.Context, p *probe) (int, error) {
		var ne *durability.RestoreNeedsEpochError
		if _, err := p.st.RestoreBookmarkOnNextSession(ctx, bn); !errors.As(err, &ne) {
			c.errorf("under lease.None: %v, want a *durability.RestoreNeedsEpochError", err)
		}
		return 0, nil
	})
	// A log without bookmarks.
	rtLocal := c.runtime(rtConfig{})
	sl := c.probeClass(rtLocal, "Restore", nil).stub("local")
	must(c, sl, "request on the local log", func(ctx context.Context, p *probe) (int, error) {
		var nb *durability.NoBookmarksError
		if _, err := p.st.RestoreBookmarkOnNextSession(ctx, bn); !errors.As(err, &nb) {
			c.errorf("on the local log: %v, want a *durability.NoBookmarksError", err)
		}
		return 0, nil
	})
}

// The session that restores must write an epoch above every epoch the
// bucket holds for the cell: a shard lock's epochs rise above every epoch
// recorded in its shard file, and a grant records its epoch before its
// first upload, so the next grant of the same shard directory restores.
// A grant that does not (shard files lost, their counters restarted) is
// refused (*durability.EpochInUseError) and the request kept, never
// applied under an epoch a restore could confuse with the old state's.
func caseRestoreBookmarkEpoch(c *checkT) {
	e := newRestoreEnv(c)
	rt := c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(false), clock: e.clk})
	s := c.probeClass(rt, "Restore", nil).stub("a")
	b5 := bookmarkAfter(c, s, 5)
	b8 := bookmarkAfter(c, s, 8)
	restoreAndAbort(c, s, b5, 8)
	c.closeRuntime(rt)

	rt = c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.leaseIn(false, "fresh-shards"), clock: e.clk})
	s = c.probeClass(rt, "Restore", nil).stub("a")
	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	var inUse *durability.EpochInUseError
	if !errors.As(err, &inUse) {
		c.errorf("a grant whose epoch is not above the bucket's newest: %v, want a *durability.EpochInUseError", err)
	}
	if !e.pending(s.Key()) {
		c.errorf("the refused session dropped the restore request")
	}
	c.closeRuntime(rt)

	rt = c.runtime(rtConfig{dir: e.dir, log: e.log(), lease: e.lease(false), clock: e.clk})
	s = c.probeClass(rt, "Restore", nil).stub("a")
	type out struct {
		v int64
		b string
	}
	o := must(c, s, "read under the shard directory's next epoch", func(ctx context.Context, p *probe) (out, error) {
		v, err := p.get(ctx, "n")
		if err != nil {
			return out{}, err
		}
		b, err := p.st.CurrentBookmark(ctx)
		return out{v, b}, err
	})
	pb8, _ := durability.ParseBookmark(b8)
	po, _ := durability.ParseBookmark(o.b)
	if o.v != 5 || po.Epoch <= pb8.Epoch {
		c.errorf("the next grant of the shard directory: n = %d at %s, want 5 under an epoch above %d", o.v, o.b, pb8.Epoch)
	}
}
