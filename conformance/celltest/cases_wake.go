package celltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/wakeport"
)

// The wake cases check celld's alarm installation identity (_cf_WAKE and
// its triggers) and the runtime's hook that publishes it to a fleet's wake
// index (cell.Options.Wake), plus Runtime.Wake.
func wakeCases() []caseDef {
	return []caseDef{
		{"wake/schema", caseWakeSchema},
		{"wake/sequence", caseWakeSequence},
		{"wake/epoch", caseWakeEpoch},
		{"wake/legacy-seed", caseWakeLegacySeed},
		{"wake/publish-per-commit", caseWakePublishPerCommit},
		{"wake/reply-waits-for-publication", caseWakeReplyWaits},
		{"wake/publication-failure-resets", caseWakePublicationFailure},
		{"wake/runtime-wake", caseRuntimeWake},
		{"wake/announce", caseWakeAnnounce},
	}
}

// wakeConfig is what a wake case varies in its runtimes.
type wakeConfig = rtConfig

// wakeRuntime builds a runtime with a wake publisher (see rtConfig.pub).
func (c *checkT) wakeRuntime(cfg wakeConfig) *cell.Runtime {
	return c.runtime(cfg)
}

func (c *checkT) closeRuntime(rt *cell.Runtime) {
	if err := rt.Close(c.ctx); err != nil {
		c.fatalf("Close: %v", err)
	}
}

// epochLease grants every cell at once under a fixed epoch, as a fleet
// lease would under one ownership epoch.
type epochLease uint64

func (l epochLease) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	return &testGrant{epoch: uint64(l), lost: make(chan struct{})}, nil
}

// ownedElsewhere refuses every cell: another node owns it.
type ownedElsewhere struct{}

func (ownedElsewhere) TryAcquire(ctx context.Context, key string) (lease.Grant, error) {
	class, id, _ := strings.Cut(key, ":")
	return nil, &lease.CellOwnedElsewhereError{Class: class, ID: id, Owner: "node-b"}
}

// recordingPublisher records every Publish. Unless held, a publication is
// done once its commit is durable, failing with fail if set; held ones wait
// for release.
type recordingPublisher struct {
	mu    sync.Mutex
	calls []publishCall
	hold  bool
	held  []heldPublication
	fail  error
}

type publishCall struct {
	p         wakeport.Publication
	committed durability.Durable
}

type heldPublication struct {
	f         *durability.Future
	committed durability.Durable
	fail      error
}

func (r *recordingPublisher) Publish(p wakeport.Publication, committed durability.Durable) durability.Durable {
	if p.AtMs != nil {
		at := *p.AtMs
		p.AtMs = &at
	}
	f := durability.NewFuture()
	r.mu.Lock()
	r.calls = append(r.calls, publishCall{p, committed})
	h := heldPublication{f, committed, r.fail}
	if r.hold {
		r.held = append(r.held, h)
		r.mu.Unlock()
		return f
	}
	r.mu.Unlock()
	go h.finish()
	return f
}

func (h heldPublication) finish() {
	<-h.committed.Done()
	h.f.Resolve(h.fail)
}

func (r *recordingPublisher) setHold(hold bool) {
	r.mu.Lock()
	r.hold = hold
	r.mu.Unlock()
}

func (r *recordingPublisher) setFail(err error) {
	r.mu.Lock()
	r.fail = err
	r.mu.Unlock()
}

// release stops holding and finishes every held publication.
func (r *recordingPublisher) release() {
	r.mu.Lock()
	r.hold = false
	held := r.held
	r.held = nil
	r.mu.Unlock()
	for _, h := range held {
		go h.finish()
	}
}

// changes is recorded without the announcements an open makes.
func (r *recordingPublisher) changes() []publishCall {
	var out []publishCall
	for _, call := range r.recorded() {
		if !call.p.Announce {
			out = append(out, call)
		}
	}
	return out
}

func (r *recordingPublisher) recorded() []publishCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// pubOf is the publication wanted for cell key at (epoch, seq), due at at
// (nil: the alarm was deleted).
func pubOf(key string, epoch, seq uint64, at *time.Time) wakeport.Publication {
	p := wakeport.Publication{Cell: key, Epoch: epoch, Seq: seq}
	if at != nil {
		ms := at.UnixMilli()
		p.AtMs = &ms
	}
	return p
}

func timeAt(d time.Duration) *time.Time {
	t := epoch.Add(d)
	return &t
}

func showPub(p wakeport.Publication) string {
	at := "nil"
	if p.AtMs != nil {
		at = fmt.Sprintf("%+v", time.UnixMilli(*p.AtMs).Sub(epoch))
	}
	return fmt.Sprintf("{%s %d-%d at %s}", p.Cell, p.Epoch, p.Seq, at)
}

func samePub(a, b wakeport.Publication) bool {
	if a.Cell != b.Cell || a.Epoch != b.Epoch || a.Seq != b.Seq || (a.AtMs == nil) != (b.AtMs == nil) {
		return false
	}
	return a.AtMs == nil || *a.AtMs == *b.AtMs
}

// expectPubs checks that exactly want were published so far, in order,
// leaving out the announcements an open makes (wake/announce checks those).
func (c *checkT) expectPubs(r *recordingPublisher, what string, want ...wakeport.Publication) {
	got := r.changes()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = samePub(got[i].p, want[i])
	}
	if !ok {
		var g, w []string
		for _, p := range got {
			g = append(g, showPub(p.p))
		}
		for _, p := range want {
			w = append(w, showPub(p))
		}
		c.errorf("%s: published %v, want %v", what, g, w)
	}
}

// rawWake reads a cell's committed _cf_WAKE row straight from its file (the
// runtime must be closed), as "[epoch sequence at_ms]", or "none".
func (c *checkT) rawWake(dir, key string) string {
	path, err := cell.DatabasePath(dir, key)
	if err != nil {
		c.fatalf("DatabasePath: %v", err)
	}
	conn, err := c.h.Driver.Open(c.ctx, driverConfig(path))
	if err != nil {
		c.fatalf("open %s: %v", path, err)
	}
	defer conn.Close()
	rows := c.rawRows(conn, "SELECT epoch, sequence, at_ms FROM _cf_WAKE WHERE scope = ?", key)
	if len(rows) == 0 {
		return "none"
	}
	return fmt.Sprint(rows[0])
}

// wakeRow is what rawWake shows for a row.
func wakeRow(epochHex string, seq int64, at *time.Time) string {
	var atv any
	if at != nil {
		atv = at.UnixMilli()
	}
	return fmt.Sprint([]any{epochHex, seq, atv})
}

// normSQL drops the layout of a CREATE statement (runs of white space, and
// white space beside punctuation) so celld's text and an equivalent one
// compare equal while any change of words or values does not.
func normSQL(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && ((i > 0 && strings.IndexByte("(),;=+", s[i-1]) >= 0) || (i+1 < len(s) && strings.IndexByte("(),;=+", s[i+1]) >= 0)) {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// celldWakeSchema is what celld's wake record creates: sqlite_schema's
// (type, name, tbl_name) and its SQL, compared with normSQL.
var celldWakeSchema = []struct{ typ, name, table, sql string }{
	{"table", "_cf_WAKE", "_cf_WAKE", "CREATE TABLE _cf_WAKE (scope TEXT PRIMARY KEY, epoch TEXT NOT NULL CHECK(length(epoch)=16), " +
		"sequence INTEGER NOT NULL CHECK(typeof(sequence)='integer' AND sequence>=0), at_ms INTEGER)"},
	{"trigger", "_cf_WAKE_insert", "_cf_ALARM", "CREATE TRIGGER _cf_WAKE_insert AFTER INSERT ON _cf_ALARM BEGIN " +
		"UPDATE _cf_WAKE SET sequence=sequence+1,at_ms=NEW.at_ms WHERE scope=NEW.scope; END"},
	{"trigger", "_cf_WAKE_update", "_cf_ALARM", "CREATE TRIGGER _cf_WAKE_update AFTER UPDATE OF at_ms,generation ON _cf_ALARM BEGIN " +
		"UPDATE _cf_WAKE SET sequence=sequence+1,at_ms=NEW.at_ms WHERE scope=NEW.scope; END"},
	{"trigger", "_cf_WAKE_delete", "_cf_ALARM", "CREATE TRIGGER _cf_WAKE_delete AFTER DELETE ON _cf_ALARM BEGIN " +
		"UPDATE _cf_WAKE SET sequence=sequence+1,at_ms=NULL WHERE scope=OLD.scope; END"},
}

// _cf_WAKE and its three triggers are celld's; the row is seeded on open
// (epoch 0 without ownership); the runtime's own alarm statements fire the
// triggers with no publisher configured; user SQL cannot touch any of it.
func caseWakeSchema(c *checkT) {
	rt := c.runtime(rtConfig{})
	pc := c.probeClass(rt, "WakeSchema", nil)
	s := pc.stub("a")
	must(c, s, "user SQL on _cf_WAKE", func(ctx context.Context, p *probe) (int, error) {
		for _, q := range []string{
			"SELECT * FROM _cf_WAKE",
			"UPDATE _cf_WAKE SET sequence = 0",
			"DELETE FROM _cf_WAKE",
			"DROP TRIGGER _cf_WAKE_insert",
		} {
			_, err := p.st.SQL().Exec(ctx, q)
			var de *cell.DeniedError
			if !errors.As(err, &de) {
				c.errorf("user SQL %q returned %v, want a *cell.DeniedError (_cf_WAKE is the runtime's)", q, err)
			}
		}
		// A user trigger cannot reach it either: SQLite may accept the
		// trigger, but firing it is refused.
		q := "CREATE TRIGGER mine AFTER INSERT ON t BEGIN UPDATE _cf_WAKE SET sequence = 0; END"
		if _, err := p.st.SQL().Exec(ctx, q); err == nil {
			q = "INSERT INTO t(k, v) VALUES('x', 1)"
			_, err = p.st.SQL().Exec(ctx, q)
			var de *cell.DeniedError
			if !errors.As(err, &de) {
				c.errorf("user SQL %q firing a trigger that writes _cf_WAKE returned %v, want a *cell.DeniedError", q, err)
			}
		}
		return 0, nil
	})
	must(c, s, "SetAlarm", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.SetAlarm(ctx, epoch.Add(time.Hour)) })
	must(c, s, "DeleteAlarm", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.DeleteAlarm(ctx) })
	dir := rt.DataDir()
	c.closeRuntime(rt)

	conn := c.openRaw(dir, s.Key())
	for _, w := range celldWakeSchema {
		rows := c.rawRows(conn, "SELECT tbl_name, sql FROM sqlite_schema WHERE type = ? AND name = ?", w.typ, w.name)
		if len(rows) != 1 {
			c.errorf("sqlite_schema has %d %ss named %s, want 1", len(rows), w.typ, w.name)
			continue
		}
		sql, _ := rows[0][1].(string)
		if rows[0][0] != w.table || normSQL(sql) != normSQL(w.sql) {
			c.errorf("%s %s is on %v as %q, want on %s as celld's %q", w.typ, w.name, rows[0][0], sql, w.table, w.sql)
		}
	}
	if n := c.rawRows(conn, "SELECT count(*) FROM sqlite_schema WHERE tbl_name = '_cf_ALARM' AND type = 'trigger'"); fmt.Sprint(n) != "[[3]]" {
		c.errorf("_cf_ALARM has %v triggers, want celld's 3", n)
	}
	conn.Close()
	// Set, then delete: the sequence moved twice, under lease.None's epoch 0.
	if got, want := c.rawWake(dir, s.Key()), wakeRow("0000000000000000", 2, nil); got != want {
		c.errorf("_cf_WAKE row is %s, want %s (seeded on open; the set and the delete each count)", got, want)
	}
}

// The sequence moves on every change of the alarm row: a set, a re-set, a
// retry after a failed run, a delete, and the deletion after a successful
// run; the committed row matches the last publication.
func caseWakeSequence(c *checkT) {
	clk := clock.NewFake(epoch)
	pub := &recordingPublisher{}
	dir := filepath.Join(c.dir, "seq")
	rt := c.wakeRuntime(wakeConfig{dir: dir, clock: clk, lease: epochLease(7), pub: pub})
	var fail atomic.Bool
	ns, runs := c.alarmClass(rt, "WakeSeq", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error {
		if fail.Load() {
			return errors.New("alarm failed")
		}
		return nil
	})
	key := ns.Key(ns.IDFromName("a"))
	set := func(d time.Duration) {
		alarmCall(c, ns, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.SetAlarm(ctx, epoch.Add(d)) })
	}
	var want []wakeport.Publication
	step := func(what string, seq uint64, at *time.Time) {
		// A call queues behind the alarm event, whose settle publishes
		// before it lets the gate go; other steps published in their reply.
		alarmCall(c, ns, "sync", func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil })
		want = append(want, pubOf(key, 7, seq, at))
		c.expectPubs(pub, what, want...)
	}
	set(10 * time.Second)
	step("set", 1, timeAt(10*time.Second))
	set(20 * time.Second)
	step("re-set", 2, timeAt(20*time.Second))
	fail.Store(true)
	clk.Set(epoch.Add(20 * time.Second))
	wait(c, runs, "the failing run")
	step("retry after a failed run", 3, timeAt(22*time.Second))
	fail.Store(false)
	alarmCall(c, ns, "DeleteAlarm", func(ctx context.Context, o *alarmObj) (int, error) { return 0, o.st.DeleteAlarm(ctx) })
	step("delete", 4, nil)
	set(30 * time.Second)
	step("set again", 5, timeAt(30*time.Second))
	clk.Set(epoch.Add(30 * time.Second))
	wait(c, runs, "the successful run")
	step("deletion after a successful run", 6, nil)
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, key), wakeRow("0000000000000007", 6, nil); got != want {
		c.errorf("committed _cf_WAKE row is %s, want %s", got, want)
	}
}

// The first write under a lease's epoch raises the row's epoch to it (16
// lowercase hex) and keeps the sequence; an open that only reads either
// leaves the row as it is (it stores nothing) or raises it already; a lower
// positive epoch is refused at open; no ownership (epoch 0) never lowers it.
func caseWakeEpoch(c *checkT) {
	clk := clock.NewFake(epoch)
	dir := filepath.Join(c.dir, "epoch")
	noop := func(ctx context.Context, p *probe) (int, error) { return 0, nil }
	open := func(l lease.Lease) (*cell.Runtime, *cell.Stub[*probe]) {
		rt := c.wakeRuntime(wakeConfig{dir: dir, clock: clk, lease: l})
		return rt, c.probeClass(rt, "WakeEpoch", nil).stub("a")
	}
	at := timeAt(time.Hour)

	rt, s := open(epochLease(0x1f))
	must(c, s, "SetAlarm", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.SetAlarm(ctx, *at) })
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, s.Key()), wakeRow("000000000000001f", 1, at); got != want {
		c.errorf("under epoch 0x1f the row is %s, want %s", got, want)
	}

	rt, s = open(epochLease(0x20))
	must(c, s, "activate under a higher epoch", noop)
	c.closeRuntime(rt)
	// An open that only reads may leave the row as it was (it stores
	// nothing: lazy activation) or raise it at open (an implementation
	// that writes its epoch when it activates): both were and are valid.
	lazyRow, eagerRow := wakeRow("000000000000001f", 1, at), wakeRow("0000000000000020", 1, at)
	if got := c.rawWake(dir, s.Key()); got != lazyRow && got != eagerRow {
		c.errorf("after an open under epoch 0x20 that only read the row is %s, want %s (nothing stored) or %s (epoch raised at open, sequence kept)", got, lazyRow, eagerRow)
	}
	rt, s = open(epochLease(0x21))
	must(c, s, "write under a higher epoch", func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.KV().Put(ctx, "k", 1)
	})
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, s.Key()), wakeRow("0000000000000021", 1, at); got != want {
		c.errorf("after a write under epoch 0x21 the row is %s, want %s (epoch raised, sequence kept)", got, want)
	}

	rt, s = open(epochLease(3))
	_, err := cell.Call(c.ctx, s, noop)
	var werr *cell.WakeRecordError
	var aerr *cell.ActivationError
	if !errors.As(err, &werr) || !errors.As(err, &aerr) {
		c.errorf("an open under a lower epoch returned %v, want an *ActivationError carrying a *WakeRecordError", err)
	}
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, s.Key()), wakeRow("0000000000000021", 1, at); got != want {
		c.errorf("after a refused lower epoch the row is %s, want %s", got, want)
	}

	rt, s = open(nil) // lease.None: epoch 0
	must(c, s, "SetAlarm without ownership", func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.SetAlarm(ctx, epoch.Add(2*time.Hour))
	})
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, s.Key()), wakeRow("0000000000000021", 2, timeAt(2*time.Hour)); got != want {
		c.errorf("after a set without ownership the row is %s, want %s (epoch 0 never lowers it)", got, want)
	}
}

// A database from before _cf_WAKE that holds an alarm gets the row on its
// next open: sequence 0, the stored deadline, the alarm row untouched; the
// triggers then count from there.
func caseWakeLegacySeed(c *checkT) {
	clk := clock.NewFake(epoch)
	dir := filepath.Join(c.dir, "legacy")
	const class = "WakeLegacy"
	id := cell.IDFromName("celltest", class, "a")
	key := cell.CellKey(class, id)
	path, err := cell.DatabasePath(dir, key)
	if err != nil {
		c.fatalf("DatabasePath: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		c.fatalf("mkdir: %v", err)
	}
	at := timeAt(time.Hour)
	raw, err := c.h.Driver.Open(c.ctx, driverConfig(path))
	if err != nil {
		c.fatalf("open %s: %v", path, err)
	}
	if _, err := raw.Exec(c.ctx, "CREATE TABLE _cf_ALARM (scope TEXT PRIMARY KEY, at_ms INTEGER, retry INTEGER DEFAULT 0, counted_retry INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0)"); err != nil {
		c.fatalf("create a legacy _cf_ALARM: %v", err)
	}
	if _, err := raw.Exec(c.ctx, "INSERT INTO _cf_ALARM VALUES(?, ?, 1, 1, 42)", key, at.UnixMilli()); err != nil {
		c.fatalf("store a legacy alarm: %v", err)
	}
	raw.Close()

	noop := func(ctx context.Context, p *probe) (int, error) { return 0, nil }
	rt := c.wakeRuntime(wakeConfig{dir: dir, clock: clk, lease: epochLease(4)})
	s := c.probeClass(rt, class, nil).stub("a")
	must(c, s, "activate", noop)
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, key), wakeRow("0000000000000004", 0, at); got != want {
		c.errorf("a legacy alarm's row is %s, want %s", got, want)
	}
	conn := c.openRaw(dir, key)
	if rows := c.rawRows(conn, "SELECT at_ms, retry, counted_retry, generation FROM _cf_ALARM"); fmt.Sprint(rows) != fmt.Sprint([][]any{{at.UnixMilli(), int64(1), int64(1), int64(42)}}) {
		c.errorf("seeding changed the alarm row to %v", rows)
	}
	conn.Close()

	rt = c.wakeRuntime(wakeConfig{dir: dir, clock: clk, lease: epochLease(4)})
	s = c.probeClass(rt, class, nil).stub("a")
	must(c, s, "DeleteAlarm", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.DeleteAlarm(ctx) })
	c.closeRuntime(rt)
	if got, want := c.rawWake(dir, key), wakeRow("0000000000000004", 1, nil); got != want {
		c.errorf("after deleting the legacy alarm the row is %s, want %s", got, want)
	}
}

// Publish is called once per commit that changed the alarm, with the
// identity and deadline that commit left, in order, handed the commit's
// own Durable; commits that did not change the alarm publish nothing.
func caseWakePublishPerCommit(c *checkT) {
	pub := &recordingPublisher{}
	log := c.controlLog()
	rt := c.wakeRuntime(wakeConfig{lease: epochLease(3), pub: pub, log: log})
	pc := c.probeClass(rt, "WakePub", nil)
	s := pc.stub("a")
	key := s.Key()
	do := func(what string, fn func(ctx context.Context, p *probe) error) {
		must(c, s, what, func(ctx context.Context, p *probe) (int, error) { return 0, fn(ctx, p) })
	}
	do("activate and write", func(ctx context.Context, p *probe) error { _, err := p.incr(ctx, "n"); return err })
	do("KV put", func(ctx context.Context, p *probe) error { return p.st.KV().Put(ctx, "k", 1) })
	do("GetAlarm", func(ctx context.Context, p *probe) error { _, _, err := p.st.GetAlarm(ctx); return err })
	do("DeleteAlarm with no alarm", func(ctx context.Context, p *probe) error { return p.st.DeleteAlarm(ctx) })
	c.expectPubs(pub, "after commits that did not change the alarm")

	do("SetAlarm twice in one turn", func(ctx context.Context, p *probe) error {
		if err := p.st.SetAlarm(ctx, epoch.Add(10*time.Second)); err != nil {
			return err
		}
		return p.st.SetAlarm(ctx, epoch.Add(20*time.Second))
	})
	want := []wakeport.Publication{pubOf(key, 3, 2, timeAt(20*time.Second))}
	c.expectPubs(pub, "after one commit that set the alarm twice", want...)

	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		if err := p.st.SetAlarm(ctx, epoch.Add(time.Hour)); err != nil {
			return 0, err
		}
		panic("rolled back")
	})
	if !isBroken(err) {
		c.errorf("a panicking handler returned %v, want a BrokenObjectError", err)
	}
	do("read after the reset", func(ctx context.Context, p *probe) error { _, err := p.get(ctx, "n"); return err })
	c.expectPubs(pub, "after a rolled-back SetAlarm", want...)

	do("SetAlarm, yield, write", func(ctx context.Context, p *probe) error {
		if err := p.st.SetAlarm(ctx, epoch.Add(30*time.Second)); err != nil {
			return err
		}
		if _, err := cell.Await(ctx, func(ctx context.Context) (int, error) { return 0, nil }); err != nil {
			return err
		}
		_, err := p.incr(ctx, "n")
		return err
	})
	want = append(want, pubOf(key, 3, 3, timeAt(30*time.Second)))
	c.expectPubs(pub, "after a turn that set the alarm and yielded, then only wrote", want...)

	log.Hold()
	reply := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) { return 0, p.st.DeleteAlarm(ctx) })
	c.eventually("the delete to be published", func() bool { return len(pub.changes()) == len(want)+1 })
	want = append(want, pubOf(key, 3, 4, nil))
	c.expectPubs(pub, "after DeleteAlarm", want...)
	committed := pub.changes()[len(want)-1].committed
	select {
	case <-committed.Done():
		c.errorf("the Durable handed to Publish had resolved while its commit was still held by the log")
	default:
	}
	early := !quiet(reply, settle) // quiet consumes a reply that came
	if early {
		c.errorf("the reply left while its commit was held")
	}
	log.Release()
	if !early {
		if r := wait(c, reply, "the reply after the log released"); r.err != nil {
			c.errorf("DeleteAlarm: %v", r.err)
		}
	}
	select {
	case <-committed.Done():
		if err := committed.Err(); err != nil {
			c.errorf("the commit's Durable failed: %v", err)
		}
	default:
		c.errorf("the Durable handed to Publish is unresolved though its commit is durable and the reply left")
	}
}

// A reply that changed the alarm leaves only once the publication's
// Durable resolves.
func caseWakeReplyWaits(c *checkT) {
	pub := &recordingPublisher{}
	rt := c.wakeRuntime(wakeConfig{lease: epochLease(1), pub: pub})
	pc := c.probeClass(rt, "WakeHeld", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	pub.setHold(true)
	reply := callAsync(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.SetAlarm(ctx, epoch.Add(time.Hour))
	})
	c.eventually("the publication", func() bool { return len(pub.changes()) == 1 })
	early := !quiet(reply, settle) // quiet consumes a reply that came
	if early {
		c.errorf("the reply left before its wake publication was done")
	}
	pub.release()
	if !early {
		if r := wait(c, reply, "the reply after the publication"); r.err != nil {
			c.errorf("SetAlarm: %v", r.err)
		}
	}
}

// A failed publication resets the object as a failed commit does: the
// reply gets a BrokenObjectError naming the publication, and the next call
// builds a fresh instance.
func caseWakePublicationFailure(c *checkT) {
	pub := &recordingPublisher{}
	rt := c.wakeRuntime(wakeConfig{lease: epochLease(1), pub: pub})
	pc := c.probeClass(rt, "WakeFail", nil)
	s := pc.stub("a")
	must(c, s, "warm up", func(ctx context.Context, p *probe) (int64, error) { return p.incr(ctx, "n") })
	pub.setFail(errors.New("injected: the wake entry was refused"))
	_, err := cell.Call(c.ctx, s, func(ctx context.Context, p *probe) (int, error) {
		return 0, p.st.SetAlarm(ctx, epoch.Add(time.Hour))
	})
	var perr *wakeport.PublishError
	if !isBroken(err) || !errors.As(err, &perr) {
		c.errorf("a reply whose publication failed returned %v, want a BrokenObjectError carrying a *wakeport.PublishError", err)
	} else if !samePub(perr.Publication, pubOf(s.Key(), 1, 1, timeAt(time.Hour))) {
		c.errorf("the failure names %s, want the failed publication", showPub(perr.Publication))
	}
	pub.setFail(nil)
	must(c, s, "the call after the reset", func(ctx context.Context, p *probe) (int64, error) { return p.get(ctx, "n") })
	if g := pc.built.Load(); g != 2 {
		c.errorf("the object was constructed %d times, want 2 (a fresh instance after the reset)", g)
	}
}

// Runtime.Wake activates a cell this runtime never ran, by key: its stored
// due alarm runs and its deletion is published. A cell with no alarm just
// activates and is evicted when idle; a cell owned elsewhere reports the
// lease's error.
func caseRuntimeWake(c *checkT) {
	clk := clock.NewFake(epoch)
	dirA := filepath.Join(c.dir, "a")
	rtA := c.wakeRuntime(wakeConfig{dir: dirA, clock: clk})
	nsA, _ := c.alarmClass(rtA, "Woken", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	key := nsA.Key(nsA.IDFromName("a"))
	alarmCall(c, nsA, "SetAlarm", func(ctx context.Context, o *alarmObj) (int, error) {
		return 0, o.st.SetAlarm(ctx, epoch.Add(time.Minute))
	})
	c.closeRuntime(rtA)
	clk.Set(epoch.Add(2 * time.Minute))

	// Another node's data directory, empty when the class registers: no
	// timer knows the alarm, as on a node that never ran the cell.
	pub := &recordingPublisher{}
	dirB := filepath.Join(c.dir, "b")
	rtB := c.wakeRuntime(wakeConfig{dir: dirB, clock: clk, lease: epochLease(2), pub: pub, idle: time.Minute})
	nsB, runs := c.alarmClass(rtB, "Woken", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	c.expectNoTimer(clk, "before Wake")
	c.copyCell(dirA, dirB, key)

	if err := rtB.Wake(c.ctx, key); err != nil {
		c.fatalf("Wake(%s): %v", key, err)
	}
	clk.Advance(0) // the due alarm's timer fires now
	if r := wait(c, runs, "the woken cell's alarm"); r.err != nil || !r.info.ScheduledTime.Equal(epoch.Add(time.Minute)) {
		c.errorf("the woken alarm ran with %+v (err %v), want the stored alarm due at +1m", r.info, r.err)
	}
	// A call queues behind the alarm event, whose settle publishes first.
	if _, err := cell.Call(c.ctx, nsB.Get(nsB.IDFromName("a")), func(ctx context.Context, o *alarmObj) (int, error) { return 0, nil }); err != nil {
		c.errorf("a call after the woken alarm: %v", err)
	}
	c.expectPubs(pub, "after the woken alarm ran", pubOf(key, 2, 2, nil))

	idle := nsB.Key(nsB.IDFromName("no-alarm"))
	if err := rtB.Wake(c.ctx, idle); err != nil {
		c.errorf("Wake of a cell without an alarm: %v", err)
	}
	if !slices.Contains(rtB.ActiveCells(), idle) {
		c.errorf("the woken cell without an alarm is not active")
	}
	if !quiet(runs, settle) {
		c.errorf("an alarm ran for a cell that has none")
	}
	// Waking a cell already in memory leaves it alone: it does not put
	// off its eviction (an entry never retired would keep it for good).
	clk.Advance(40 * time.Second)
	if err := rtB.Wake(c.ctx, idle); err != nil {
		c.errorf("Wake of a cell in memory: %v", err)
	}
	clk.Advance(20 * time.Second)
	c.eventually("the idle woken cell to be evicted", func() bool { return !slices.Contains(rtB.ActiveCells(), idle) })

	rtC := c.wakeRuntime(wakeConfig{clock: clk, lease: ownedElsewhere{}})
	c.alarmClass(rtC, "Woken", func(ctx context.Context, o *alarmObj, info cell.AlarmInfo) error { return nil })
	err := rtC.Wake(c.ctx, key)
	var owned *lease.CellOwnedElsewhereError
	var aerr *cell.ActivationError
	if !errors.As(err, &owned) || !errors.As(err, &aerr) {
		c.errorf("Wake of a cell owned elsewhere returned %v, want the activation error carrying *lease.CellOwnedElsewhereError", err)
	}
}

// copyCell copies a cell's database files (with any journal beside it)
// from one data directory to another; both runtimes must be closed or not
// yet using the cell.
func (c *checkT) copyCell(from, to, key string) {
	src, err := cell.DatabasePath(from, key)
	if err != nil {
		c.fatalf("DatabasePath: %v", err)
	}
	dst, err := cell.DatabasePath(to, key)
	if err != nil {
		c.fatalf("DatabasePath: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		c.fatalf("mkdir: %v", err)
	}
	files, err := filepath.Glob(src + "*")
	if err != nil || len(files) == 0 {
		c.fatalf("no database files for %s (%v)", key, err)
	}
	for _, f := range files {
		in, err := os.Open(f)
		if err != nil {
			c.fatalf("copy: %v", err)
		}
		out, err := os.Create(dst + strings.TrimPrefix(f, src))
		if err == nil {
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		in.Close()
		if err != nil {
			c.fatalf("copy %s: %v", f, err)
		}
	}
}

// caseWakeAnnounce: the first commit after an open under a new epoch
// publishes the cell's installation under that epoch (an announcement),
// even when it did not change the alarm, so the index drops older entries
// (a dead owner's, migration seeds); later commits publish only alarm
// changes.
func caseWakeAnnounce(c *checkT) {
	clk := clock.NewFake(epoch)
	dir := filepath.Join(c.dir, "announce")
	noop := func(ctx context.Context, p *probe) (int, error) { return 0, nil }
	at := timeAt(time.Hour)
	var pubs []*recordingPublisher
	open := func(l lease.Lease) (*cell.Runtime, *cell.Stub[*probe]) {
		pub := &recordingPublisher{}
		pubs = append(pubs, pub)
		rt := c.wakeRuntime(wakeConfig{dir: dir, clock: clk, lease: l, pub: pub})
		return rt, c.probeClass(rt, "WakeAnnounce", nil).stub("a")
	}
	announced := func(pub *recordingPublisher) []wakeport.Publication {
		var out []wakeport.Publication
		for _, call := range pub.recorded() {
			if call.p.Announce {
				out = append(out, call.p)
			}
		}
		return out
	}

	rt, s := open(epochLease(5))
	must(c, s, "SetAlarm", func(ctx context.Context, p *probe) (int, error) { return 0, p.st.SetAlarm(ctx, *at) })
	must(c, s, "a write that leaves the alarm alone", noop)
	c.closeRuntime(rt)
	// The activation's own commit announces epoch 5 (no alarm yet).
	if got := announced(pubs[0]); len(got) != 1 || !samePub(got[0], pubOf(s.Key(), 5, 0, nil)) {
		c.errorf("under epoch 5 the announcements are %v, want exactly the activation's {5-0, no alarm}", got)
	}
	c.expectPubs(pubs[0], "under epoch 5", pubOf(s.Key(), 5, 1, at))

	rt, s = open(epochLease(6))
	must(c, s, "activate under epoch 6", noop)
	must(c, s, "another turn", noop)
	c.closeRuntime(rt)
	got := announced(pubs[1])
	if len(got) != 1 || !samePub(got[0], pubOf(s.Key(), 6, 1, at)) {
		var g []string
		for _, p := range got {
			g = append(g, showPub(p))
		}
		c.errorf("after an open under epoch 6 the announcements are %v, want exactly %s", g, showPub(pubOf(s.Key(), 6, 1, at)))
	}
	c.expectPubs(pubs[1], "turns under epoch 6 that left the alarm alone")
}
