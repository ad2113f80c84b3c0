package drivertest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/driver"
)

// fakeDriver opens fakeConns; it runs no SQL, so every SQL case fails on
// it. It exists to test the runner and the twins, not the suite's cases.
type fakeDriver struct {
	caps    driver.Capabilities
	openErr error
	panics  bool
}

func (d *fakeDriver) Name() string                      { return "fake" }
func (d *fakeDriver) Capabilities() driver.Capabilities { return d.caps }
func (d *fakeDriver) Open(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if d.panics {
		panic("fake driver exploded")
	}
	if d.openErr != nil {
		return nil, d.openErr
	}
	return &fakeConn{img: image(1, 2, 3)}, nil
}

// fakeConn holds an image and a scripted list of pending commits.
type fakeConn struct {
	img      []byte
	pending  []driver.CapturedCommit
	inTx     bool
	auth     driver.Authorizer
	restored int
}

var errNoSQL = errors.New("fake connection runs no SQL")

func (c *fakeConn) Exec(ctx context.Context, sql string, args ...any) (driver.Result, error) {
	if sql == "BEGIN DEFERRED" {
		c.inTx = true
		return driver.Result{}, nil
	}
	return driver.Result{}, errNoSQL
}
func (c *fakeConn) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	if strings.HasPrefix(sql, "PRAGMA ") {
		if c.auth != nil && c.auth(driver.ActionPragma, strings.TrimPrefix(sql, "PRAGMA "), "", "", "") == driver.AuthDeny {
			return nil, &driver.SQLiteError{Code: driver.CodeAuth, Msg: "not authorized"}
		}
		return &fakeRows{vals: []any{int64(testPS)}}, nil
	}
	return nil, errNoSQL
}
func (c *fakeConn) Begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.inTx = true
	return nil
}
func (c *fakeConn) Commit(ctx context.Context) error { c.inTx = false; return nil }
func (c *fakeConn) Rollback(ctx context.Context) error {
	c.inTx = false
	return nil
}
func (c *fakeConn) InTransaction() bool                       { return c.inTx }
func (c *fakeConn) PageSize(ctx context.Context) (int, error) { return testPS, nil }
func (c *fakeConn) PageCount(ctx context.Context) (int64, error) {
	return int64(len(c.img) / testPS), nil
}
func (c *fakeConn) Serialize(ctx context.Context) ([]byte, error) {
	return bytes.Clone(c.img), nil
}
func (c *fakeConn) Restore(ctx context.Context, img []byte) error {
	c.img = bytes.Clone(img)
	c.pending = nil
	c.restored++
	return nil
}
func (c *fakeConn) SetAuthorizer(fn driver.Authorizer) error { c.auth = fn; return nil }
func (c *fakeConn) Close() error                             { return nil }
func (c *fakeConn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	out := c.pending
	c.pending = nil
	return out, nil
}

// commitPages applies a commit to the fake's image and queues it.
func (c *fakeConn) commitPages(cm driver.CapturedCommit) {
	c.img = applyCommit(c.img, cm)
	c.pending = append(c.pending, cm)
}

type fakeRows struct {
	vals []any
	done bool
}

func (r *fakeRows) Columns() []string { return []string{"v"} }
func (r *fakeRows) Next() bool {
	if r.done {
		return false
	}
	r.done = true
	return true
}
func (r *fakeRows) Values() []any { return r.vals }
func (r *fakeRows) Err() error    { return nil }
func (r *fakeRows) Close() error  { return nil }

func TestCaseNamesAreUniqueAndTwinsNameRealCases(t *testing.T) {
	names := CaseNames()
	for i, n := range names {
		if slices.Contains(names[i+1:], n) {
			t.Errorf("case %s is listed twice", n)
		}
		if !strings.Contains(n, "/") || strings.ContainsAny(n, " \t") {
			t.Errorf("case name %q: want group/name without spaces", n)
		}
	}
	seen := map[string]bool{}
	for _, tw := range Twins() {
		if seen[tw.Name] {
			t.Errorf("twin %s listed twice", tw.Name)
		}
		seen[tw.Name] = true
		if len(tw.CaughtBy) == 0 {
			t.Errorf("twin %s names no case that catches it", tw.Name)
		}
		for _, c := range tw.CaughtBy {
			if !slices.Contains(names, c) {
				t.Errorf("twin %s is caught by %q, which is not a case", tw.Name, c)
			}
		}
	}
}

func TestRunReportTurnsFailuresAndPanicsIntoResults(t *testing.T) {
	ctx := t.Context()
	rep, err := RunReport(ctx, Harness{Driver: &fakeDriver{openErr: errors.New("no database for you")}, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seed != 42 || len(rep.Cases) != len(CaseNames()) || rep.Subject != "fake" {
		t.Fatalf("report: seed %d, %d results, subject %q", rep.Seed, len(rep.Cases), rep.Subject)
	}
	if rep.OK() {
		t.Fatal("a driver that cannot open a database passed")
	}
	res, _ := rep.Case("sql/open")
	if !res.Failed() || !strings.Contains(res.Failures[0], "no database for you") {
		t.Fatalf("sql/open result: %+v", res)
	}
	// The failure names the case's line, not the helper's (checkT's
	// helpers call Helper, as a testing.T helper would).
	if !strings.HasPrefix(res.Failures[0], "cases_sql.go:") {
		t.Fatalf("sql/open's failure does not name the case's line: %q", res.Failures[0])
	}
	if s := rep.String(); !strings.Contains(s, "(seed 42)") {
		t.Fatalf("report does not say how to replay: %s", s)
	}
	// Capability cases skip rather than fail when nothing is declared.
	if res, _ := rep.Case("sessions/workload"); !res.Skipped() {
		t.Fatalf("sessions/workload on a driver without sessions: %+v", res)
	}

	rep, err = RunReport(ctx, Harness{Driver: &fakeDriver{panics: true}, Seed: 1}, suite.Only("sql/"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Cases {
		if !strings.HasPrefix(r.Name, "sql/") {
			if r.Status != suite.Skipped || r.Reason != "not selected" {
				t.Fatalf("suite.Only let %s through: %+v", r.Name, r)
			}
			continue
		}
		if !r.Failed() || !strings.Contains(r.Failures[0], "panic: fake driver exploded") {
			t.Fatalf("%s: a panicking driver gave %+v", r.Name, r)
		}
	}
}

func TestHarnessSeed(t *testing.T) {
	t.Setenv(SeedEnv, "1234")
	h, err := Harness{Driver: &fakeDriver{}}.resolved()
	if err != nil || h.Seed != 1234 || h.BulkRows != DefaultBulkRows || h.Steps != DefaultSteps {
		t.Fatalf("resolved = %+v, %v", h, err)
	}
	h, _ = Harness{Driver: &fakeDriver{}, Seed: 9}.resolved()
	if h.Seed != 9 {
		t.Fatalf("Harness.Seed must win over the environment, got %d", h.Seed)
	}
	t.Setenv(SeedEnv, "soon")
	if _, err := (Harness{Driver: &fakeDriver{}}).resolved(); err == nil {
		t.Fatal("a malformed seed was accepted")
	}
	if _, err := (Harness{}).resolved(); err == nil {
		t.Fatal("a nil driver was accepted")
	}
}

// captureFixture opens a twin of the fake driver and returns the
// wrapper and the fake underneath.
func captureFixture(t *testing.T, wrap func(driver.Driver) driver.Driver) (driver.Conn, *fakeConn) {
	t.Helper()
	conn, err := wrap(&fakeDriver{caps: driver.Capabilities{PageCapture: true}}).Open(t.Context(), driver.Config{PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	return conn, conn.(*twinConn).Conn.(*fakeConn)
}

func take(t *testing.T, conn driver.Conn) []driver.CapturedCommit {
	t.Helper()
	cms, err := conn.(driver.PageCapturer).TakeCommits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return cms
}

func TestTwinsBreakWhatTheySay(t *testing.T) {
	ctx := t.Context()
	t.Run("drop-page", func(t *testing.T) {
		conn, fake := captureFixture(t, DropPage)
		base := bytes.Clone(fake.img)
		fake.commitPages(commit(4, pg(2, 9), pg(4, 4)))
		cms := take(t, conn)
		if len(cms) != 1 || len(cms[0].Pages) != 1 || cms[0].Pages[0].Pgno != 2 {
			t.Fatalf("DropPage gave %+v", cms)
		}
		if verifyCommits(testPS, base, cms, nil, fake.img) == nil {
			t.Fatal("the replay check misses the dropped page")
		}
	})
	t.Run("later-page", func(t *testing.T) {
		conn, fake := captureFixture(t, LaterPage)
		base := bytes.Clone(fake.img)
		fake.commitPages(commit(3, pg(2, 9)))
		s1 := bytes.Clone(fake.img)
		fake.commitPages(commit(3, pg(2, 10)))
		cms := take(t, conn)
		if !bytes.Equal(cms[0].Pages[0].Data, page(10)) {
			t.Fatal("LaterPage did not report the later content")
		}
		if verifyCommits(testPS, base, cms, [][]byte{s1, fake.img}, fake.img) == nil {
			t.Fatal("the snapshot check misses lazily read pages")
		}
	})
	t.Run("stale-restore", func(t *testing.T) {
		conn, fake := captureFixture(t, StaleRestore)
		fake.commitPages(commit(3, pg(2, 9)))
		if err := conn.Restore(ctx, image(1, 2, 3)); err != nil {
			t.Fatal(err)
		}
		if cms := take(t, conn); len(cms) != 1 {
			t.Fatalf("StaleRestore reported %d commits after Restore, want the 1 stale one", len(cms))
		}
	})
	t.Run("rollback-commits", func(t *testing.T) {
		conn, fake := captureFixture(t, RollbackCommits)
		fake.commitPages(commit(3, pg(2, 9)))
		conn.Begin(ctx)
		conn.Rollback(ctx)
		conn.Rollback(ctx) // no transaction: no fake commit
		cms := take(t, conn)
		if len(cms) != 2 || len(cms[1].Pages) != 0 || cms[1].PageCount != 3 {
			t.Fatalf("RollbackCommits gave %+v", cms)
		}
	})
	t.Run("wrong-image", func(t *testing.T) {
		conn, fake := captureFixture(t, WrongImage)
		img, _ := conn.Serialize(ctx)
		if bytes.Equal(img, fake.img) || !equalIgnoringJournalMode(img, fake.img) {
			t.Fatal("WrongImage should differ exactly in the change counter")
		}
		if binary.BigEndian.Uint32(img[24:28]) != 8 {
			t.Fatal("change counter not bumped")
		}
	})
	t.Run("false-sessions", func(t *testing.T) {
		d := FalseSessions(&fakeDriver{})
		if !d.Capabilities().Sessions {
			t.Fatal("FalseSessions must declare Sessions")
		}
		conn, _ := d.Open(ctx, driver.Config{})
		s, err := conn.(driver.Sessioner).StartSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cs, _ := s.Changeset(); len(cs) != 0 {
			t.Fatal("FalseSessions recorded something")
		}
	})
	t.Run("opaque-errors", func(t *testing.T) {
		d := OpaqueErrors(&fakeDriver{})
		conn, _ := d.Open(ctx, driver.Config{})
		conn.SetAuthorizer(strictPolicy)
		_, err := conn.Query(ctx, "PRAGMA page_size")
		if err == nil || errors.Is(err, driver.ErrNotAuthorized) {
			t.Fatalf("OpaqueErrors kept the error's identity: %v", err)
		}
	})
	t.Run("authorized-internals", func(t *testing.T) {
		conn, _ := AuthorizedInternals(&fakeDriver{}).Open(ctx, driver.Config{})
		if n, err := conn.PageSize(ctx); err != nil || n != testPS {
			t.Fatalf("PageSize = %d, %v", n, err)
		}
		conn.SetAuthorizer(strictPolicy)
		if _, err := conn.PageSize(ctx); !errors.Is(err, driver.ErrNotAuthorized) {
			t.Fatalf("PageSize under a strict policy: %v", err)
		}
	})
	t.Run("lost-authorizer", func(t *testing.T) {
		conn, fake := captureFixture(t, LostAuthorizer)
		conn.SetAuthorizer(strictPolicy)
		conn.Restore(ctx, image(1))
		if fake.auth != nil || fake.restored != 1 {
			t.Fatal("LostAuthorizer kept the authorizer")
		}
	})
	t.Run("no-cancel", func(t *testing.T) {
		conn, _ := NoCancel(&fakeDriver{}).Open(ctx, driver.Config{})
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := conn.Begin(done); err != nil {
			t.Fatalf("NoCancel passed the cancellation on: %v", err)
		}
	})
	t.Run("deferred-begin", func(t *testing.T) {
		conn, fake := captureFixture(t, DeferredBegin)
		if err := conn.Begin(ctx); err != nil || !fake.inTx {
			t.Fatalf("DeferredBegin: %v", err)
		}
	})
	t.Run("forwarding", func(t *testing.T) {
		// Optional interfaces the wrapped Conn lacks answer ErrUnsupported.
		conn, _ := DeferredBegin(&fakeDriver{}).Open(ctx, driver.Config{})
		if err := conn.(driver.Checkpointer).Checkpoint(ctx, driver.CheckpointPassive); !errors.Is(err, driver.ErrUnsupported) {
			t.Fatalf("Checkpoint on a wrapper of a non-WAL conn: %v", err)
		}
		if _, err := conn.(driver.Sessioner).StartSession(ctx); !errors.Is(err, driver.ErrUnsupported) {
			t.Fatalf("StartSession on a wrapper of a conn without sessions: %v", err)
		}
		if n := DeferredBegin(&fakeDriver{}).Name(); n != "fake+deferred-begin" {
			t.Fatalf("twin name %q", n)
		}
	})
}

func TestFailedCaseKeepsItsDatabasesAndIsNotHiddenBySkip(t *testing.T) {
	dir := t.TempDir()
	// capture/memory on a driver declaring capture whose in-memory Open
	// fails with an empty message: an error, then a skip.
	d := &fakeDriver{caps: driver.Capabilities{PageCapture: true}, openErr: errors.New("")}
	rep, err := RunReport(t.Context(), Harness{Driver: d, Dir: dir}, suite.Only("capture/memory"))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := rep.Case("capture/memory")
	if !res.Failed() || res.Skipped() {
		t.Fatalf("a failure followed by a skip: %+v", res)
	}
	if len(res.Log) == 0 || !strings.Contains(res.Log[len(res.Log)-1], dir) {
		t.Fatalf("the failed case does not say where its databases are: %q", res.Log)
	}
}
