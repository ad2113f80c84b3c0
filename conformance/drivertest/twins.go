package drivertest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/driver"
)

// Negative twins: wrappers that break one claim of the driver they wrap,
// the way real drivers get it wrong. The suite must reject each one in the
// cases its Twin entry names; RunTwins shows that it does.

// twinDef is one deliberately broken variant of a driver.
type twinDef struct {
	// Name says what is broken.
	Name string
	// Wrap builds the broken driver around the driver under test.
	Wrap func(driver.Driver) driver.Driver
	// Applies reports whether the fault can show on a driver with these
	// capabilities (a capture fault needs page capture).
	Applies func(driver.Capabilities) bool
	// CaughtBy are the cases that must each fail on the twin.
	CaughtBy []string
}

func always(driver.Capabilities) bool         { return true }
func withCapture(c driver.Capabilities) bool  { return c.PageCapture }
func withSessions(c driver.Capabilities) bool { return c.Sessions }

func withCheckpoint(c driver.Capabilities) bool { return c.Checkpoint }

func withCounters(c driver.Capabilities) bool { return c.StatementCounters }

// Twins lists every shipped twin: each replaces the harness's driver with
// a wrapper of it that breaks one claim, and applies to a driver with the
// capabilities the fault needs.
func Twins() []suite.Twin[Harness] {
	var out []suite.Twin[Harness]
	for _, tw := range twinDefs() {
		out = append(out, suite.Twin[Harness]{
			Name:     tw.Name,
			Wrap:     func(h Harness) Harness { h.Driver = tw.Wrap(h.Driver); return h },
			Applies:  func(h Harness) bool { return h.Driver != nil && tw.Applies(h.Driver.Capabilities()) },
			CaughtBy: tw.CaughtBy,
		})
	}
	return out
}

func twinDefs() []twinDef {
	return []twinDef{
		{"drop-page", DropPage, withCapture, []string{"capture/commit-time", "capture/restore-resets", "capture/workload", "capture/bulk", "capture/page-sizes"}},
		// Its own entry: capture/memory is skipped by drivers that refuse
		// to capture an in-memory database, and a twin is checked only where
		// every case it names applies.
		{"drop-page-in-memory", DropPage, withCapture, []string{"capture/memory"}},
		{"later-page", LaterPage, withCapture, []string{"capture/commit-time", "capture/workload", "capture/page-sizes"}},
		{"reused-buffer", ReusedBuffer, withCapture, []string{"capture/held-pages"}},
		{"stale-restore", StaleRestore, withCapture, []string{"capture/restore-resets"}},
		{"rollback-commits", RollbackCommits, withCapture, []string{"capture/rollback"}},
		{"wrong-image", WrongImage, always, []string{"image/round-trip", "image/matches-file", "image/wal-image", "image/rollback-image", "image/restore-then-write", "sql/memory"}},
		{"short-write-image", ShortWriteImage, always, []string{"image/write-image"}},
		{"restore-failed-fill", RestoreFailedFill, always, []string{"image/restore-with"}},
		{"false-sessions", FalseSessions, always, []string{"sessions/workload", "sessions/conflict", "sessions/filter"}},
		{"apply-runs-triggers", ApplyRunsTriggers, withSessions, []string{"sessions/triggers"}},
		{"opaque-errors", OpaqueErrors, always, []string{"auth/deny-read", "auth/deny-pragma", "auth/deny-attach", "auth/remove"}},
		{"lost-authorizer", LostAuthorizer, always, []string{"auth/survives-restore"}},
		{"authorized-internals", AuthorizedInternals, always, []string{"auth/driver-internals"}},
		{"no-cancel", NoCancel, always, []string{"sql/context"}},
		{"deferred-begin", DeferredBegin, always, []string{"sql/begin-immediate"}},
		{"stale-columns", StaleColumns, always, []string{"sql/schema-change"}},
		{"blank-result", BlankResult, always, []string{"sql/result"}},
		{"text-as-blob", TextAsBlob, always, []string{"sql/arguments", "sql/storage-classes"}},
		{"first-statement-only", FirstStatementOnly, always, []string{"sql/multi-statement"}},
		{"closed-exec-succeeds", ClosedExecSucceeds, always, []string{"sql/closed"}},
		{"extended-code-as-primary", ExtendedCodeAsPrimary, always, []string{"sql/errors"}},
		{"rollback-is-commit", RollbackIsCommit, always, []string{"sql/transactions"}},
		{"ignore-rollback-to", IgnoreRollbackTo, always, []string{"sql/savepoints"}},
		{"page-count-plus-one", PageCountPlusOne, always, []string{"sql/page-size-count"}},
		{"misdeclared-counters", Misdeclared(func(c *driver.Capabilities) { c.StatementCounters = !c.StatementCounters }, "misdeclared-counters"), always, []string{"counters/declared"}},
		{"stale-counters", StaleCounters, withCounters, []string{"counters/values"}},
		{"accepts-garbage", AcceptsGarbage, always, []string{"image/rejects-garbage"}},
		{"bumps-change-counter", BumpsChangeCounter, always, []string{"image/deterministic"}},
		{"ignore-as-allow", IgnoreAsAllow, always, []string{"auth/ignore"}},
		{"swapped-auth-args", SwappedAuthArgs, always, []string{"auth/arguments"}},
		{"creates-missing-dirs", CreatesMissingDirs, always, []string{"sql/open"}},
		{"misdeclared-capture", Misdeclared(func(c *driver.Capabilities) { c.PageCapture = !c.PageCapture }, "misdeclared-capture"), always, []string{"capture/declared"}},
		{"misdeclared-sessions", Misdeclared(func(c *driver.Capabilities) { c.Sessions = !c.Sessions }, "misdeclared-sessions"), always, []string{"sessions/declared"}},
		{"misdeclared-checkpoint", Misdeclared(func(c *driver.Capabilities) { c.Checkpoint = !c.Checkpoint }, "misdeclared-checkpoint"), always, []string{"checkpoint/declared"}},
		{"passive-checkpoint-only", PassiveCheckpointOnly, withCheckpoint, []string{"checkpoint/modes"}},
	}
}

// StaleColumns remembers the column names a query text returned the first
// time and keeps reporting that shape, like a statement cache that reads a
// recompiled statement's columns before its first step.
func StaleColumns(d driver.Driver) driver.Driver {
	return wrapDriver(d, "stale-columns", nil, func(c *twinConn) {
		seen := map[string][]string{}
		c.query = func(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
			rows, err := c.Conn.Query(ctx, sql, args...)
			if err != nil {
				return nil, err
			}
			cols, ok := seen[sql]
			if !ok {
				seen[sql] = rows.Columns()
				return rows, nil
			}
			return staleRows{Rows: rows, cols: cols}, nil
		}
	})
}

type staleRows struct {
	driver.Rows
	cols []string
}

func (r staleRows) Columns() []string { return r.cols }

func (r staleRows) Values() []any {
	v := r.Rows.Values()
	out := make([]any, len(r.cols))
	copy(out, v)
	return out
}

// DropPage leaves the highest-numbered page out of every captured commit,
// like a capture that misses the last write of a batch.
func DropPage(d driver.Driver) driver.Driver {
	return wrapDriver(d, "drop-page", nil, func(c *twinConn) {
		c.takeCommits = func(ctx context.Context) ([]driver.CapturedCommit, error) {
			commits, err := c.innerTake(ctx)
			for i := range commits {
				if n := len(commits[i].Pages); n > 0 {
					commits[i].Pages = commits[i].Pages[:n-1]
				}
			}
			return commits, err
		}
	})
}

// LaterPage reports each captured page with its content at TakeCommits
// time instead of commit time: a driver that records page numbers and
// reads the pages lazily.
func LaterPage(d driver.Driver) driver.Driver {
	return wrapDriver(d, "later-page", nil, func(c *twinConn) {
		c.takeCommits = func(ctx context.Context) ([]driver.CapturedCommit, error) {
			commits, err := c.innerTake(ctx)
			if err != nil || len(commits) == 0 {
				return commits, err
			}
			now, err := c.Conn.Serialize(ctx)
			if err != nil {
				return nil, err
			}
			for i := range commits {
				ps := commits[i].PageSize
				for j, p := range commits[i].Pages {
					off := int(p.Pgno-1) * ps
					if off+ps <= len(now) {
						commits[i].Pages[j].Data = bytes.Clone(now[off : off+ps])
					}
				}
			}
			return commits, nil
		}
	})
}

// ReusedBuffer copies every captured page into one buffer per connection
// that the next TakeCommits overwrites: a driver that reads frames into a
// reusable buffer and hands out pages that still point into it.
func ReusedBuffer(d driver.Driver) driver.Driver {
	return wrapDriver(d, "reused-buffer", nil, func(c *twinConn) {
		var buf []byte
		c.takeCommits = func(ctx context.Context) ([]driver.CapturedCommit, error) {
			commits, err := c.innerTake(ctx)
			need := 0
			for _, cm := range commits {
				need += len(cm.Pages) * cm.PageSize
			}
			if cap(buf) < need {
				buf = make([]byte, need)
			}
			off := 0
			for i := range commits {
				for j, p := range commits[i].Pages {
					n := copy(buf[off:], p.Data)
					commits[i].Pages[j].Data = buf[off : off+n : off+n]
					off += n
				}
				commits[i].Pool = nil // the buffer is not the pool's
			}
			return commits, err
		}
	})
}

// ApplyRunsTriggers applies changesets and then replays what the target's
// triggers on trig_src (the table caseSessionsTriggers uses) would have
// done for each recorded insert: a driver that leaves triggers on during
// the apply.
func ApplyRunsTriggers(d driver.Driver) driver.Driver {
	return wrapDriver(d, "apply-runs-triggers", nil, func(c *twinConn) {
		c.applyChangeset = func(ctx context.Context, cs []byte) error {
			before, err := c.Conn.Query(ctx, "SELECT count(*) FROM trig_src")
			n0 := int64(-1)
			if err == nil {
				if before.Next() {
					driver.ScanValues(before.Values(), &n0)
				}
				before.Close()
			}
			if err := c.Conn.(driver.Sessioner).ApplyChangeset(ctx, cs); err != nil {
				return err
			}
			if n0 < 0 {
				return nil // not the triggers case's tables
			}
			_, err = c.Conn.Exec(ctx, "INSERT INTO trig_log(note) SELECT 'insert ' || k FROM trig_src ORDER BY k LIMIT -1 OFFSET ?", n0)
			return err
		}
	})
}

// StaleRestore keeps the commits made before a Restore and reports them
// afterwards, as a driver that forgets to reset capture on Restore would.
func StaleRestore(d driver.Driver) driver.Driver {
	return wrapDriver(d, "stale-restore", nil, func(c *twinConn) {
		var stale []driver.CapturedCommit
		c.restore = func(ctx context.Context, img []byte) error {
			commits, err := c.innerTake(ctx)
			if err != nil {
				return err
			}
			stale = append(stale, commits...)
			return c.Conn.Restore(ctx, img)
		}
		c.takeCommits = func(ctx context.Context) ([]driver.CapturedCommit, error) {
			commits, err := c.innerTake(ctx)
			out := append(stale, commits...)
			stale = nil
			return out, err
		}
	})
}

// RollbackCommits reports an (empty) commit for every rolled-back
// transaction, like a capture that does not know the batch was abandoned.
func RollbackCommits(d driver.Driver) driver.Driver {
	return wrapDriver(d, "rollback-commits", nil, func(c *twinConn) {
		var queue []driver.CapturedCommit
		c.rollback = func(ctx context.Context) error {
			open := c.Conn.InTransaction()
			commits, err := c.innerTake(ctx)
			if err != nil {
				return err
			}
			queue = append(queue, commits...)
			if err := c.Conn.Rollback(ctx); err != nil || !open {
				return err
			}
			ps, err := c.Conn.PageSize(ctx)
			if err != nil {
				return err
			}
			n, err := c.Conn.PageCount(ctx)
			if err != nil {
				return err
			}
			queue = append(queue, driver.CapturedCommit{PageSize: ps, PageCount: uint32(n)})
			return nil
		}
		c.takeCommits = func(ctx context.Context) ([]driver.CapturedCommit, error) {
			commits, err := c.innerTake(ctx)
			out := append(queue, commits...)
			queue = nil
			return out, err
		}
	})
}

// WrongImage returns images whose change counter was bumped, as copying
// through SQLite's backup API does: not the exact file content.
func WrongImage(d driver.Driver) driver.Driver {
	return wrapDriver(d, "wrong-image", nil, func(c *twinConn) {
		c.serialize = func(ctx context.Context) ([]byte, error) {
			img, err := c.Conn.Serialize(ctx)
			if err != nil || len(img) < 100 {
				return img, err
			}
			img = bytes.Clone(img)
			counter := binary.BigEndian.Uint32(img[24:28]) + 1
			binary.BigEndian.PutUint32(img[24:28], counter)
			binary.BigEndian.PutUint32(img[92:96], counter)
			return img, nil
		}
	})
}

// ShortWriteImage streams the image without its last page, like a
// WriteImage that reads the page count before the last commit's growth.
// (On a driver without driver.ImageWriter it writes Serialize's image cut
// short, so the case has something to reject.)
func ShortWriteImage(d driver.Driver) driver.Driver {
	return wrapDriver(d, "short-write-image", nil, func(c *twinConn) {
		c.writeImage = func(ctx context.Context, w io.Writer) (int64, error) {
			img, err := c.Conn.Serialize(ctx)
			if err != nil {
				return 0, err
			}
			ps, err := c.Conn.PageSize(ctx)
			if err != nil {
				return 0, err
			}
			n, err := w.Write(img[:max(len(img)-ps, 0)])
			return int64(n), err
		}
	})
}

// RestoreFailedFill installs whatever RestoreWith's fill wrote, even when
// the fill failed: a restore cut short replaces the database with half an
// image. (On a driver without driver.ImageRestorer it restores the written
// bytes itself, so the case has something to reject.)
func RestoreFailedFill(d driver.Driver) driver.Driver {
	return wrapDriver(d, "restore-failed-fill", nil, func(c *twinConn) {
		c.restoreWith = func(ctx context.Context, fill func(driver.ImageFile) error) error {
			var buf memImage
			fillErr := fill(&buf)
			if err := c.Conn.Restore(ctx, buf.b); err != nil {
				return err
			}
			return fillErr
		}
	})
}

type memImage struct{ b []byte }

func (m *memImage) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memImage) Truncate(size int64) error {
	if int(size) <= len(m.b) {
		m.b = m.b[:size]
		return nil
	}
	m.b = append(m.b, make([]byte, int(size)-len(m.b))...)
	return nil
}

// FalseSessions declares Sessions but records nothing, like a library
// whose pre-update hook is a silent stub; its ApplyChangeset forwards to
// the real one when there is one and otherwise pretends to succeed.
func FalseSessions(d driver.Driver) driver.Driver {
	caps := d.Capabilities()
	caps.Sessions = true
	return wrapDriver(d, "false-sessions", &caps, func(c *twinConn) {
		c.startSession = func(ctx context.Context, tables ...string) (driver.Session, error) {
			return nullSession{}, nil
		}
		c.applyChangeset = func(ctx context.Context, cs []byte) error {
			if s, ok := c.Conn.(driver.Sessioner); ok {
				return s.ApplyChangeset(ctx, cs)
			}
			return nil
		}
	})
}

type nullSession struct{}

func (nullSession) Changeset() ([]byte, error) { return []byte{}, nil }
func (nullSession) Close() error               { return nil }

// OpaqueErrors flattens every error to its text, losing the identity
// callers match with errors.Is and errors.As (ErrNotAuthorized, context
// errors, *SQLiteError).
func OpaqueErrors(d driver.Driver) driver.Driver {
	opaque := func(err error) error {
		if err == nil {
			return nil
		}
		return errors.New(err.Error())
	}
	return wrapDriver(d, "opaque-errors", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			r, err := c.Conn.Exec(ctx, sql, args...)
			return r, opaque(err)
		}
		c.query = func(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
			rows, err := c.Conn.Query(ctx, sql, args...)
			if err != nil {
				return nil, opaque(err)
			}
			return opaqueRows{rows, opaque}, nil
		}
		c.begin = func(ctx context.Context) error { return opaque(c.Conn.Begin(ctx)) }
	})
}

type opaqueRows struct {
	driver.Rows
	opaque func(error) error
}

func (r opaqueRows) Err() error { return r.opaque(r.Rows.Err()) }

// LostAuthorizer drops the authorizer when it restores, like a driver that
// reopens the database and forgets to reinstall it.
func LostAuthorizer(d driver.Driver) driver.Driver {
	return wrapDriver(d, "lost-authorizer", nil, func(c *twinConn) {
		c.restore = func(ctx context.Context, img []byte) error {
			if err := c.Conn.Restore(ctx, img); err != nil {
				return err
			}
			return c.Conn.SetAuthorizer(nil)
		}
	})
}

// AuthorizedInternals answers PageSize and PageCount with PRAGMA
// statements subject to the user's authorizer, so a policy that forbids
// pragmas breaks the driver's own bookkeeping.
func AuthorizedInternals(d driver.Driver) driver.Driver {
	pragma := func(c *twinConn, ctx context.Context, name string) (int64, error) {
		rows, err := c.Conn.Query(ctx, "PRAGMA "+name)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		if !rows.Next() {
			return 0, fmt.Errorf("PRAGMA %s returned no row: %v", name, rows.Err())
		}
		n, _ := rows.Values()[0].(int64)
		return n, rows.Err()
	}
	return wrapDriver(d, "authorized-internals", nil, func(c *twinConn) {
		c.pageSize = func(ctx context.Context) (int, error) {
			n, err := pragma(c, ctx, "page_size")
			return int(n), err
		}
		c.pageCount = func(ctx context.Context) (int64, error) { return pragma(c, ctx, "page_count") }
	})
}

// NoCancel ignores the caller's context: statements run to the end.
func NoCancel(d driver.Driver) driver.Driver {
	return wrapDriver(d, "no-cancel", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			return c.Conn.Exec(context.WithoutCancel(ctx), sql, args...)
		}
		c.query = func(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
			return c.Conn.Query(context.WithoutCancel(ctx), sql, args...)
		}
		c.begin = func(ctx context.Context) error { return c.Conn.Begin(context.WithoutCancel(ctx)) }
	})
}

// DeferredBegin opens transactions with a plain (deferred) BEGIN, which
// takes the write lock only at the first write.
func DeferredBegin(d driver.Driver) driver.Driver {
	return wrapDriver(d, "deferred-begin", nil, func(c *twinConn) {
		c.begin = func(ctx context.Context) error {
			_, err := c.Conn.Exec(ctx, "BEGIN DEFERRED")
			return err
		}
	})
}

// twinDriver wraps a driver, opening twinConns configured by setup.
type twinDriver struct {
	inner driver.Driver
	name  string
	caps  driver.Capabilities
	setup func(*twinConn)
	// beforeOpen, if set, runs before the wrapped driver's Open.
	beforeOpen func(driver.Config)
}

func wrapDriver(d driver.Driver, fault string, caps *driver.Capabilities, setup func(*twinConn)) driver.Driver {
	td := &twinDriver{inner: d, name: d.Name() + "+" + fault, caps: d.Capabilities(), setup: setup}
	if caps != nil {
		td.caps = *caps
	}
	return td
}

func (d *twinDriver) Name() string                      { return d.name }
func (d *twinDriver) Capabilities() driver.Capabilities { return d.caps }

func (d *twinDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if d.beforeOpen != nil {
		d.beforeOpen(cfg)
	}
	conn, err := d.inner.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tc := &twinConn{Conn: conn}
	d.setup(tc)
	return tc, nil
}

// twinConn forwards every method, optional interfaces included (answering
// ErrUnsupported where the wrapped Conn lacks one, which the Capabilities
// contract allows), unless a twin replaced it.
type twinConn struct {
	driver.Conn

	exec           func(ctx context.Context, sql string, args ...any) (driver.Result, error)
	query          func(ctx context.Context, sql string, args ...any) (driver.Rows, error)
	begin          func(ctx context.Context) error
	rollback       func(ctx context.Context) error
	pageSize       func(ctx context.Context) (int, error)
	pageCount      func(ctx context.Context) (int64, error)
	serialize      func(ctx context.Context) ([]byte, error)
	restore        func(ctx context.Context, img []byte) error
	takeCommits    func(ctx context.Context) ([]driver.CapturedCommit, error)
	startSession   func(ctx context.Context, tables ...string) (driver.Session, error)
	applyChangeset func(ctx context.Context, cs []byte) error
	writeImage     func(ctx context.Context, w io.Writer) (int64, error)
	restoreWith    func(ctx context.Context, fill func(driver.ImageFile) error) error
	setAuthorizer  func(fn driver.Authorizer) error
	close          func() error
	checkpoint     func(ctx context.Context, mode driver.CheckpointMode) error
}

func (c *twinConn) SetAuthorizer(fn driver.Authorizer) error {
	if c.setAuthorizer != nil {
		return c.setAuthorizer(fn)
	}
	return c.Conn.SetAuthorizer(fn)
}

func (c *twinConn) Close() error {
	if c.close != nil {
		return c.close()
	}
	return c.Conn.Close()
}

func (c *twinConn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	if c.exec != nil {
		return c.exec(ctx, sql, args...)
	}
	return c.Conn.Exec(ctx, sql, args...)
}

func (c *twinConn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	if c.query != nil {
		return c.query(ctx, sql, args...)
	}
	return c.Conn.Query(ctx, sql, args...)
}

func (c *twinConn) Begin(ctx context.Context) error {
	if c.begin != nil {
		return c.begin(ctx)
	}
	return c.Conn.Begin(ctx)
}

func (c *twinConn) Rollback(ctx context.Context) error {
	if c.rollback != nil {
		return c.rollback(ctx)
	}
	return c.Conn.Rollback(ctx)
}

func (c *twinConn) PageSize(ctx context.Context) (int, error) {
	if c.pageSize != nil {
		return c.pageSize(ctx)
	}
	return c.Conn.PageSize(ctx)
}

func (c *twinConn) PageCount(ctx context.Context) (int64, error) {
	if c.pageCount != nil {
		return c.pageCount(ctx)
	}
	return c.Conn.PageCount(ctx)
}

func (c *twinConn) Serialize(ctx context.Context) ([]byte, error) {
	if c.serialize != nil {
		return c.serialize(ctx)
	}
	return c.Conn.Serialize(ctx)
}

func (c *twinConn) Restore(ctx context.Context, img []byte) error {
	if c.restore != nil {
		return c.restore(ctx, img)
	}
	return c.Conn.Restore(ctx, img)
}

// innerTake takes the wrapped Conn's commits; none when it cannot capture.
func (c *twinConn) innerTake(ctx context.Context) ([]driver.CapturedCommit, error) {
	if pc, ok := c.Conn.(driver.PageCapturer); ok {
		return pc.TakeCommits(ctx)
	}
	return nil, nil
}

func (c *twinConn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	if c.takeCommits != nil {
		return c.takeCommits(ctx)
	}
	if pc, ok := c.Conn.(driver.PageCapturer); ok {
		return pc.TakeCommits(ctx)
	}
	return nil, driver.ErrUnsupported
}

func (c *twinConn) StartSession(ctx context.Context, tables ...string) (driver.Session, error) {
	if c.startSession != nil {
		return c.startSession(ctx, tables...)
	}
	if s, ok := c.Conn.(driver.Sessioner); ok {
		return s.StartSession(ctx, tables...)
	}
	return nil, driver.ErrUnsupported
}

func (c *twinConn) ApplyChangeset(ctx context.Context, cs []byte) error {
	if c.applyChangeset != nil {
		return c.applyChangeset(ctx, cs)
	}
	if s, ok := c.Conn.(driver.Sessioner); ok {
		return s.ApplyChangeset(ctx, cs)
	}
	return driver.ErrUnsupported
}

func (c *twinConn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	if c.writeImage != nil {
		return c.writeImage(ctx, w)
	}
	if iw, ok := c.Conn.(driver.ImageWriter); ok {
		return iw.WriteImage(ctx, w)
	}
	return 0, driver.ErrUnsupported
}

func (c *twinConn) RestoreWith(ctx context.Context, fill func(driver.ImageFile) error) error {
	if c.restoreWith != nil {
		return c.restoreWith(ctx, fill)
	}
	if ir, ok := c.Conn.(driver.ImageRestorer); ok {
		return ir.RestoreWith(ctx, fill)
	}
	return driver.ErrUnsupported
}

func (c *twinConn) Checkpoint(ctx context.Context, mode driver.CheckpointMode) error {
	if c.checkpoint != nil {
		return c.checkpoint(ctx, mode)
	}
	if cp, ok := c.Conn.(driver.Checkpointer); ok {
		return cp.Checkpoint(ctx, mode)
	}
	return driver.ErrUnsupported
}
