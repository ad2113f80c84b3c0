//go:build cgo

package cgo_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

func open(t *testing.T, d *cgo.Driver, path string, capture bool) driver.Conn {
	t.Helper()
	c, err := d.Open(t.Context(), driver.Config{Path: path, PageCapture: capture})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exec(t *testing.T, c driver.Conn, sql string, args ...any) driver.Result {
	t.Helper()
	r, err := c.Exec(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("Exec(%q): %v", sql, err)
	}
	return r
}

func queryRows(t *testing.T, c driver.Conn, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := c.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("Query(%q): %v", sql, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		out = append(out, append([]any(nil), rows.Values()...))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("Query(%q): %v", sql, err)
	}
	return out
}

func serialize(t *testing.T, c driver.Conn) []byte {
	t.Helper()
	img, err := c.Serialize(t.Context())
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	return img
}

// tracker checks page capture the way the durability log relies on it:
// the image at the last check plus the captured commits, replayed in
// order, must equal Serialize now.
type tracker struct {
	t    *testing.T
	c    driver.Conn
	pc   driver.PageCapturer
	base []byte
}

func track(t *testing.T, c driver.Conn) *tracker {
	t.Helper()
	pc, ok := c.(driver.PageCapturer)
	if !ok {
		t.Fatal("a connection opened with PageCapture does not implement PageCapturer")
	}
	if _, err := pc.TakeCommits(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &tracker{t: t, c: c, pc: pc, base: serialize(t, c)}
}

// check replays the commits taken now and returns how many there were.
func (tr *tracker) check(what string) int {
	tr.t.Helper()
	commits, err := tr.pc.TakeCommits(tr.t.Context())
	if err != nil {
		tr.t.Fatalf("%s: TakeCommits: %v", what, err)
	}
	img := bytes.Clone(tr.base)
	for _, c := range commits {
		size := int(c.PageCount) * c.PageSize
		if len(img) < size {
			img = append(img, make([]byte, size-len(img))...)
		}
		img = img[:size]
		for _, p := range c.Pages {
			if len(p.Data) != c.PageSize || p.Pgno == 0 || p.Pgno > c.PageCount {
				tr.t.Fatalf("%s: malformed page %d (%d bytes) in a commit of %d pages", what, p.Pgno, len(p.Data), c.PageCount)
			}
			copy(img[int(p.Pgno-1)*c.PageSize:], p.Data)
		}
	}
	now := serialize(tr.t, tr.c)
	if !bytes.Equal(img, now) {
		tr.t.Fatalf("%s: replaying %d captured commits gives %d bytes that differ from Serialize (%d bytes)", what, len(commits), len(img), len(now))
	}
	tr.base = now
	return len(commits)
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// mattn/go-sqlite3 turns values of columns declared DATE, DATETIME,
// TIMESTAMP or BOOLEAN into time.Time or bool; the driver must not.
func TestStorageClassesKept(t *testing.T) {
	c := open(t, cgo.New(), filepath.Join(t.TempDir(), "db"), false)
	exec(t, c, "CREATE TABLE t(d DATE, dt DATETIME, ts TIMESTAMP, b BOOLEAN)")
	values := []any{"not a date", int64(1700000000000), 1.5, []byte{1, 2}, int64(5), int64(-1), "2024-01-02 03:04:05", nil}
	for _, v := range values {
		exec(t, c, "INSERT INTO t VALUES (?, ?, ?, ?)", v, v, v, v)
	}
	got := queryRows(t, c, "SELECT d, dt, ts, b FROM t ORDER BY rowid")
	for i, v := range values {
		for j := range 4 {
			if g := got[i][j]; !sameValue(g, v) {
				t.Errorf("value %v (%T) in column %d came back as %v (%T)", v, v, j, g, g)
			}
		}
	}
}

func sameValue(a, b any) bool {
	if ab, ok := a.([]byte); ok {
		bb, ok := b.([]byte)
		return ok && bytes.Equal(ab, bb)
	}
	return a == b
}

// mattn hands Exec's arguments out statement by statement; the driver
// documents that rule, and this test pins it.
func TestExecArgumentsAcrossStatements(t *testing.T) {
	c := open(t, cgo.New(), filepath.Join(t.TempDir(), "db"), false)
	exec(t, c, "CREATE TABLE t(x); INSERT INTO t VALUES (?)", 1)
	exec(t, c, "INSERT INTO t VALUES (?); INSERT INTO t VALUES (10); INSERT INTO t VALUES (? + ?)", 2, 3, 4)
	// The last statement needs two arguments but only one is left: it
	// fails before running, after the earlier statements ran.
	_, err := c.Exec(t.Context(), "INSERT INTO t VALUES (?); INSERT INTO t VALUES (?)", 5)
	if err == nil || !strings.Contains(err.Error(), "not enough args") {
		t.Errorf("too few arguments: %v", err)
	}
	// Arguments left over at the end are ignored.
	exec(t, c, "INSERT INTO t VALUES (?)", 6, 7)
	got := queryRows(t, c, "SELECT group_concat(x) FROM t")
	if want := "1,2,10,7,5,6"; got[0][0] != want {
		t.Errorf("rows %v, want %s", got[0][0], want)
	}
}

func TestCaptureRefusesUnsafePragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, cgo.New(), path, true)
	for _, sql := range []string{"PRAGMA journal_mode=DELETE", "PRAGMA main.journal_mode = 'truncate'", "PRAGMA wal_autocheckpoint=100"} {
		_, err := c.Exec(t.Context(), sql)
		if !errors.Is(err, driver.ErrNotAuthorized) || !strings.Contains(err.Error(), "page capture") {
			t.Errorf("%s: %v", sql, err)
		}
	}
	if got := queryRows(t, c, "PRAGMA journal_mode"); got[0][0] != "wal" {
		t.Errorf("journal mode is %v", got[0][0])
	}
	exec(t, c, "PRAGMA journal_mode=WAL")
	exec(t, c, "PRAGMA wal_autocheckpoint=0")
	// Without capture the same pragmas are the user's business.
	plain := open(t, cgo.New(), filepath.Join(t.TempDir(), "plain"), false)
	exec(t, plain, "PRAGMA wal_autocheckpoint=100")
}

// A checkpoint run by the user between two commits of one Exec lets SQLite
// restart the WAL over the first commit's frames; the first commit must
// have been read by then.
func TestUserCheckpointBetweenCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE t(x)")
	tr := track(t, c)
	for range 3 {
		exec(t, c, "INSERT INTO t VALUES (randomblob(3000)); PRAGMA wal_checkpoint(TRUNCATE); INSERT INTO t VALUES (randomblob(5000))")
	}
	if n := tr.check("inserts around checkpoints"); n != 6 {
		t.Errorf("%d commits captured, want 6", n)
	}
}

// The driver checkpoints the WAL itself once the log has read it and it
// has grown past CheckpointBytes; capture carries on across the restarts.
func TestCaptureAcrossDriverCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, &cgo.Driver{CheckpointBytes: 64 << 10, Synchronous: cgo.SyncNormal}, path, true)
	exec(t, c, "CREATE TABLE t(x)")
	tr := track(t, c)
	maxWAL := int64(0)
	for i := range 200 {
		exec(t, c, "INSERT INTO t VALUES (randomblob(1500))")
		maxWAL = max(maxWAL, walSize(t, path))
		if i%17 == 0 {
			tr.check("batch")
		}
	}
	tr.check("end")
	// Threshold plus one transaction's frames.
	if maxWAL > 64<<10+3*(4096+24) {
		t.Errorf("the WAL grew to %d bytes with a 64 KiB threshold", maxWAL)
	}
}

// VACUUM commits without SQLite's commit hook; the WAL hook still sees it.
func TestVacuumCaptured(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE t(x); WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 300) INSERT INTO t SELECT randomblob(2000) FROM s")
	tr := track(t, c)
	exec(t, c, "DELETE FROM t WHERE rowid % 10 != 0")
	exec(t, c, "VACUUM")
	if n := tr.check("vacuum"); n != 2 {
		t.Errorf("%d commits, want 2 (delete, vacuum)", n)
	}
}

// A statement run through Query commits when it is reset; closing its rows
// before the last one must still capture the commit.
func TestQueryCommitOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE t(x)")
	tr := track(t, c)
	rows, err := c.Query(t.Context(), "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 50) INSERT INTO t SELECT i FROM s RETURNING x")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	rows.Close()
	if n := tr.check("insert returning"); n != 1 {
		t.Errorf("%d commits, want 1", n)
	}
	if got := queryRows(t, c, "SELECT count(*) FROM t"); got[0][0] != int64(50) {
		t.Errorf("%v rows", got[0][0])
	}
}

// A database left with a WAL by another program (or a crash) is folded in
// at Open, so capture starts from an empty log and the left-over commits
// are part of the first image, not reported as commits.
func TestOpenFoldsLeftoverWAL(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	other := open(t, &cgo.Driver{Synchronous: cgo.SyncNormal}, src, false)
	exec(t, other, "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)")
	exec(t, other, "INSERT INTO t VALUES (3)")
	want := serialize(t, other)
	if walSize(t, src) == 0 {
		t.Fatal("setup: nothing in the WAL")
	}
	// Copy the files as a crash would leave them.
	dst := filepath.Join(dir, "dst")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := open(t, cgo.New(), dst, true)
	if got := serialize(t, c); !bytes.Equal(got, want) {
		t.Error("the image after Open differs from the database that left the WAL")
	}
	commits, err := c.(driver.PageCapturer).TakeCommits(t.Context())
	if err != nil || len(commits) != 0 {
		t.Errorf("TakeCommits right after Open: %d commits, %v", len(commits), err)
	}
	if n := walSize(t, dst); n != 0 {
		t.Errorf("WAL holds %d bytes after Open", n)
	}
}

func TestRestoreRejectsBadImages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	good := serialize(t, c)
	bad := map[string][]byte{
		"short":        good[:50],
		"no header":    make([]byte, 4096),
		"partial page": good[:len(good)-1],
		"page size":    func() []byte { b := bytes.Clone(good); b[16], b[17] = 0x03, 0x00; return b }(),
		"format bytes": func() []byte { b := bytes.Clone(good); b[18] = 3; return b }(),
	}
	for name, img := range bad {
		if err := c.Restore(t.Context(), img); !errors.Is(err, cgo.ErrInvalidImage) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := serialize(t, c); !bytes.Equal(got, good) {
		t.Error("a rejected image changed the database")
	}
}

// Restoring a rollback-journal image gives a WAL-mode file (bytes 18/19 =
// 2) with the same content otherwise, and stale WAL files are not applied.
func TestRestoreRollbackImageAndStaleFiles(t *testing.T) {
	dir := t.TempDir()
	mem := open(t, cgo.New(), "", false)
	exec(t, mem, "CREATE TABLE t(x); INSERT INTO t VALUES ('from the image')")
	img := serialize(t, mem)
	if img[18] != 1 {
		t.Fatalf("setup: in-memory image has format byte %d", img[18])
	}
	path := filepath.Join(dir, "db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE old(y); INSERT INTO old VALUES (1)")
	if err := c.Restore(t.Context(), img); err != nil {
		t.Fatal(err)
	}
	got := serialize(t, c)
	want := bytes.Clone(img)
	want[18], want[19] = 2, 2
	if !bytes.Equal(got, want) {
		t.Error("restored image differs from the image apart from bytes 18/19")
	}
	if rows := queryRows(t, c, "SELECT x FROM t"); len(rows) != 1 || rows[0][0] != "from the image" {
		t.Errorf("rows after Restore: %v", rows)
	}
	tr := track(t, c)
	exec(t, c, "INSERT INTO t VALUES ('after')")
	if n := tr.check("after restore"); n != 1 {
		t.Errorf("%d commits after Restore, want 1", n)
	}
	for _, suffix := range []string{".restore-"} {
		m, _ := filepath.Glob(path + suffix + "*")
		if len(m) != 0 {
			t.Errorf("temporary files left behind: %v", m)
		}
	}
}

func TestPathsNeedingEscapes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%d e")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cell?.db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE t(x)")
	tr := track(t, c)
	exec(t, c, "INSERT INTO t VALUES (1)")
	if n := tr.check("insert"); n != 1 {
		t.Errorf("%d commits", n)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at the path given: %v", err)
	}
}

func TestCaptureNeedsFile(t *testing.T) {
	_, err := cgo.New().Open(context.Background(), driver.Config{PageCapture: true})
	if !errors.Is(err, cgo.ErrCaptureNeedsFile) {
		t.Errorf("in-memory capture: %v", err)
	}
	c := open(t, cgo.New(), "", false)
	if _, ok := c.(driver.PageCapturer); ok {
		t.Error("a connection without capture implements PageCapturer")
	}
	if _, ok := c.(driver.Sessioner); ok {
		t.Error("the driver declares no sessions but implements Sessioner")
	}
}

func TestSynchronousSetting(t *testing.T) {
	for s, want := range map[cgo.Synchronous]int64{cgo.SyncFull: 2, cgo.SyncNormal: 1, cgo.SyncExtra: 3} {
		c := open(t, &cgo.Driver{Synchronous: s}, filepath.Join(t.TempDir(), "db"), false)
		if got := queryRows(t, c, "PRAGMA synchronous"); got[0][0] != want {
			t.Errorf("Synchronous %d: PRAGMA synchronous = %v, want %d", s, got[0][0], want)
		}
	}
	if _, err := (&cgo.Driver{Synchronous: 9}).Open(t.Context(), driver.Config{}); err == nil {
		t.Error("an unknown Synchronous value was accepted")
	}
}

// Closing a connection while a writing statement's rows are still open
// must not leave SQLite calling back into the closed connection's state.
func TestCloseWithOpenRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c, err := cgo.New().Open(t.Context(), driver.Config{Path: path, PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, c, "CREATE TABLE t(x)")
	rows, err := c.Query(t.Context(), "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 5) INSERT INTO t SELECT i FROM s RETURNING x")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if err := c.Close(); err != nil {
		t.Logf("Close with open rows: %v", err)
	}
	for rows.Next() {
	}
	rows.Close()
	if _, err := c.Exec(t.Context(), "SELECT 1"); !errors.Is(err, cgo.ErrClosed) {
		t.Errorf("Exec after Close: %v", err)
	}
}

// One Exec whose second commit completes only when mattn resets the
// statement (RETURNING through Exec steps once), followed by a checkpoint:
// both commits must have been read before the checkpoint lets SQLite
// restart the log.
func TestCommitByResetThenCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, cgo.New(), path, true)
	exec(t, c, "CREATE TABLE t(x)")
	tr := track(t, c)
	// The second round reuses the cached RETURNING statement, so nothing
	// is prepared between the two commits.
	for range 2 {
		exec(t, c, "INSERT INTO t VALUES (randomblob(5000)); INSERT INTO t VALUES (randomblob(5000)) RETURNING length(x)")
		if err := c.(driver.Checkpointer).Checkpoint(t.Context(), driver.CheckpointRestart); err != nil {
			t.Fatal(err)
		}
		exec(t, c, "INSERT INTO t VALUES (1)")
	}
	if n := tr.check("commits around checkpoints"); n != 6 {
		t.Errorf("%d commits, want 6", n)
	}
}
