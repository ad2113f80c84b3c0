package modernc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

// follower checks the capture invariant after every step: the image as of
// the previous TakeCommits plus the commits taken now equals Serialize now.
type follower struct {
	t    *testing.T
	c    *Conn
	base []byte
	n    int
}

func follow(t *testing.T, c *Conn) *follower {
	t.Helper()
	takeT(t, c)
	return &follower{t: t, c: c, base: serializeT(t, c)}
}

// check takes the commits, expects want of them (-1: any number), and
// compares the replayed image with Serialize.
func (f *follower) check(what string, want int) {
	f.t.Helper()
	commits := takeT(f.t, f.c)
	if want >= 0 && len(commits) != want {
		f.t.Errorf("%s: %d commits captured, want %d", what, len(commits), want)
	}
	for _, cm := range commits {
		for i, p := range cm.Pages {
			if len(p.Data) != cm.PageSize || p.Pgno == 0 || p.Pgno > cm.PageCount || (i > 0 && cm.Pages[i-1].Pgno >= p.Pgno) {
				f.t.Fatalf("%s: malformed captured page %d (pgno %d, %d bytes) of a commit with %d pages", what, i, p.Pgno, len(p.Data), cm.PageCount)
			}
		}
	}
	got := replay(f.base, commits)
	now := serializeT(f.t, f.c)
	if !bytes.Equal(got, now) {
		f.t.Fatalf("%s: the replayed image (%d bytes) differs from Serialize (%d bytes)", what, len(got), len(now))
	}
	f.base = now
	f.n += len(commits)
}

func TestCaptureSurvivesEveryKindOfCheckpoint(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", true)
	f := follow(t, c)
	mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)")
	f.check("create", 1)
	for i, step := range []func() error{
		func() error { return c.Checkpoint(ctx, driver.CheckpointPassive) },
		func() error { return c.Checkpoint(ctx, driver.CheckpointFull) },
		func() error { return c.Checkpoint(ctx, driver.CheckpointRestart) },
		func() error { return c.Checkpoint(ctx, driver.CheckpointTruncate) },
		// SQL that checkpoints behind the driver's back: the commits
		// before it were read when they committed.
		func() error { _, err := c.Exec(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); return err },
		func() error { _, err := c.Exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); return err },
	} {
		for j := range 3 {
			mustExec(t, c, "INSERT INTO t VALUES (?, randomblob(3000))", i*10+j)
		}
		if err := step(); err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
		// A commit after the checkpoint makes SQLite restart the log.
		mustExec(t, c, "UPDATE t SET v = randomblob(100) WHERE k % 2 = 0")
		f.check(fmt.Sprintf("checkpoint %d", i), 4)
	}
	// A restart by SQL the driver does not see, followed by a commit
	// larger than everything read from the old generation.
	mustExec(t, c, "PRAGMA wal_checkpoint(TRUNCATE)")
	mustExec(t, c, "INSERT INTO t VALUES (1000, x'01')")
	mustExec(t, c, "PRAGMA wal_checkpoint(PASSIVE)")
	mustExec(t, c, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 60) INSERT INTO t SELECT 2000+i, randomblob(3000) FROM n")
	mustExec(t, c, "INSERT INTO t VALUES (3000, x'02')")
	f.check("restart by SQL", 3)
}

func TestCaptureCheckpointsOnceTheWALIsLarge(t *testing.T) {
	const limit = 64 << 10
	c := openWith(t, Options{CheckpointBytes: limit}, "db", true)
	f := follow(t, c)
	mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)")
	f.check("create", 1)
	walPath := c.path + "-wal"
	restarts := 0
	for i := range 100 {
		before := c.wal.walSize()
		mustExec(t, c, "INSERT INTO t VALUES (?, randomblob(2000))", i)
		if c.wal.walSize() < before {
			restarts++ // SQLite began the log again at the start of the file
		}
		f.check(fmt.Sprintf("insert %d", i), 1)
		// One commit may run past the limit before TakeCommits checkpoints.
		if fi, err := os.Stat(walPath); err == nil && fi.Size() > 2*limit {
			t.Fatalf("the WAL grew to %d bytes despite CheckpointBytes of %d", fi.Size(), limit)
		}
	}
	if restarts < 3 {
		t.Errorf("the log restarted %d times in 100 commits of 2 KB with a 64 KiB limit", restarts)
	}
}

func TestCaptureSeesCommitOfRowsClosedEarly(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", true)
	f := follow(t, c)
	mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v)")
	f.check("create", 1)
	// The statement's commit happens when its Rows close, not on a step
	// that returned SQLITE_DONE, so SQLite's WAL hook does not run.
	r, err := c.Query(ctx, "INSERT INTO t(v) VALUES ('a'), ('b'), ('c') RETURNING k")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatalf("no row: %v", r.Err())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := queryAll(t, c, "SELECT count(*) FROM t")[0][0]; got != int64(3) {
		t.Fatalf("%v rows after the early close, want 3", got)
	}
	// Checkpointing before TakeCommits must not lose that commit either.
	if err := c.Checkpoint(ctx, driver.CheckpointTruncate); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO t(v) VALUES ('d')")
	f.check("early close", 2)
}

func TestCaptureRandomWorkload(t *testing.T) {
	ctx := context.Background()
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	c := openWith(t, Options{CheckpointBytes: 256 << 10}, "db", true)
	mustExec(t, c, "PRAGMA cache_size = 8") // a tiny cache makes large transactions spill frames before they commit
	f := follow(t, c)
	mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); CREATE INDEX tv ON t(v)")
	f.check("schema", 2) // two autocommit statements
	for step := range 60 {
		want := 1
		switch rng.IntN(7) {
		case 0:
			mustExec(t, c, "INSERT INTO t(v) VALUES (randomblob(?))", rng.IntN(6000))
		case 1:
			if err := c.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			for range 1 + rng.IntN(300) {
				mustExec(t, c, "INSERT INTO t(v) VALUES (randomblob(?))", rng.IntN(800))
			}
			mustExec(t, c, "SAVEPOINT s; DELETE FROM t WHERE k % 3 = 0; ROLLBACK TO s; RELEASE s")
			if err := c.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := c.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "DELETE FROM t")
			mustExec(t, c, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 200) INSERT INTO t(v) SELECT randomblob(2000) FROM n")
			if err := c.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			want = 0
		case 3:
			// A statement that changes no row writes no page: SQLite
			// commits nothing, and nothing is captured.
			mustExec(t, c, "DELETE FROM t WHERE k % ? = 0", 2+rng.IntN(3))
			want = -1
		case 4:
			mustExec(t, c, "VACUUM") // rewrites everything, usually shrinks
		case 5:
			mustExec(t, c, "UPDATE t SET v = randomblob(?) WHERE k % 5 = 1", rng.IntN(4000))
			want = -1
		case 6:
			if err := c.Checkpoint(ctx, driver.CheckpointMode(rng.IntN(4))); err != nil {
				t.Fatal(err)
			}
			want = 0
		}
		f.check(fmt.Sprintf("step %d", step), want)
	}
}

func TestCaptureStartsAfterAnEarlierRunsWAL(t *testing.T) {
	// A database whose WAL still holds commits (the process died before
	// checkpointing): those commits are part of the starting image, not
	// commits of the new connection.
	dir := t.TempDir()
	first := openPath(t, Options{}, dir+"/first.db", true)
	mustExec(t, first, "CREATE TABLE t(v); INSERT INTO t VALUES ('from the WAL')")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(dir + "/first.db" + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("the WAL is empty; the test needs committed frames in it")
		}
		if err := os.WriteFile(dir+"/crashed.db"+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := openPath(t, Options{}, dir+"/crashed.db", true)
	if commits := takeT(t, c); len(commits) != 0 {
		t.Errorf("TakeCommits reported %d commits of the earlier run", len(commits))
	}
	if got := queryAll(t, c, "SELECT v FROM t"); len(got) != 1 || got[0][0] != "from the WAL" {
		t.Fatalf("the WAL's commits were not recovered: %v", got)
	}
	f := follow(t, c)
	mustExec(t, c, "INSERT INTO t VALUES ('new')")
	f.check("after recovery", 1)
}

func TestCaptureFailureIsLoudAndSticky(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", true)
	mustExec(t, c, "CREATE TABLE t(v)")
	takeT(t, c)
	// Make the WAL unreadable: point the reader at a directory.
	c.wal.reset()
	c.wal.path = t.TempDir()
	_, err := c.Exec(ctx, "INSERT INTO t VALUES (1)")
	if !errors.Is(err, ErrCaptureBroken) {
		t.Fatalf("the commit whose pages could not be read returned %v, want ErrCaptureBroken", err)
	}
	for range 2 {
		if _, err := (&CapturingConn{c}).TakeCommits(ctx); !errors.Is(err, ErrCaptureBroken) {
			t.Fatalf("TakeCommits = %v, want ErrCaptureBroken", err)
		}
	}
	// Restore starts capture afresh.
	c.wal.path = c.path + "-wal"
	img := serializeT(t, c)
	if err := c.Restore(ctx, img); err != nil {
		t.Fatal(err)
	}
	f := follow(t, c)
	mustExec(t, c, "INSERT INTO t VALUES (2)")
	f.check("after restore", 1)
}

func TestCaptureNeedsAFile(t *testing.T) {
	_, err := New(Options{}).Open(context.Background(), driver.Config{PageCapture: true})
	if !errors.Is(err, ErrCaptureNeedsFile) {
		t.Fatalf("Open(in-memory, capture) = %v, want ErrCaptureNeedsFile", err)
	}
}

func TestOnlyCapturingConnectionsArePageCapturers(t *testing.T) {
	ctx := context.Background()
	d := New(Options{})
	plain, err := d.Open(ctx, driver.Config{Path: t.TempDir() + "/plain.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, ok := plain.(driver.PageCapturer); ok {
		t.Error("a connection opened without PageCapture implements driver.PageCapturer")
	}
	capt, err := d.Open(ctx, driver.Config{Path: t.TempDir() + "/capt.db", PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer capt.Close()
	for name, ok := range map[string]bool{
		"PageCapturer": is[driver.PageCapturer](capt),
		"Sessioner":    is[driver.Sessioner](capt) && is[driver.Sessioner](plain),
		"Checkpointer": is[driver.Checkpointer](capt) && is[driver.Checkpointer](plain),
	} {
		if !ok {
			t.Errorf("a connection does not implement driver.%s", name)
		}
	}
}

func is[T any](v any) bool { _, ok := v.(T); return ok }

func TestCapturingConnectionRefusesPragmasThatEndCapture(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", true)
	f := follow(t, c)
	for _, sql := range []string{"PRAGMA journal_mode=DELETE", "PRAGMA main.journal_mode = memory", "PRAGMA wal_autocheckpoint=100", "PRAGMA JOURNAL_MODE=off"} {
		_, err := c.Exec(ctx, sql)
		if !errors.Is(err, driver.ErrNotAuthorized) || !strings.Contains(err.Error(), "page-capturing") {
			t.Errorf("Exec(%s) = %v, want a refusal that says why", sql, err)
		}
	}
	if got := queryAll(t, c, "PRAGMA journal_mode"); got[0][0] != "wal" {
		t.Errorf("reading journal_mode: %v", got)
	}
	// Neither a caller's authorizer nor its removal lifts the check.
	for _, fn := range []driver.Authorizer{
		func(driver.Action, string, string, string, string) driver.AuthResult { return driver.AuthOK },
		nil,
	} {
		if err := c.SetAuthorizer(fn); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "PRAGMA journal_mode=DELETE"); !errors.Is(err, driver.ErrNotAuthorized) {
			t.Errorf("with authorizer %v: journal_mode change = %v", fn != nil, err)
		}
	}
	mustExec(t, c, "CREATE TABLE t(v); INSERT INTO t VALUES (1)")
	f.check("after the refusals", 2)
	// Without capture the caller may change them.
	plain := openT(t, "plain.db", false)
	mustExec(t, plain, "PRAGMA wal_autocheckpoint=100")
}
