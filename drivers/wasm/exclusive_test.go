package wasm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
)

func exclusiveOpts(more ...Option) []Option {
	return append([]Option{WithJournalMode(JournalWAL), WithExclusiveLocking()}, more...)
}

// A connection opened with WithExclusiveLocking holds its file: a second
// connection, exclusive or not, is refused with ErrInUse (wrapping
// SQLITE_BUSY) instead of reading or writing beside it, the first keeps
// working, and no -shm file is ever created. Once the first closes, the
// file opens again.
func TestExclusiveRefusesASecondConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	a := openTest(t, path, true, exclusiveOpts()...)
	mustExec(t, a, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	for name, opts := range map[string][]Option{
		"exclusive":     exclusiveOpts(),
		"not exclusive": {WithJournalMode(JournalWAL)},
	} {
		// The open's ctx ends the wait for the lock (5 s otherwise).
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		b, err := New(opts...).Open(ctx, driver.Config{Path: path})
		cancel()
		if err == nil {
			b.Close()
			t.Fatalf("%s: a second connection opened a file held exclusively", name)
		}
		var se *driver.SQLiteError
		if !errors.Is(err, ErrInUse) || !errors.As(err, &se) || se.Code != driver.CodeBusy {
			t.Fatalf("%s: second open: %v, want ErrInUse wrapping SQLITE_BUSY", name, err)
		}
	}
	mustExec(t, a, "INSERT INTO t VALUES (2)")
	if got := queryRows(t, a, "SELECT count(*) FROM t"); got[0][0] != int64(2) {
		t.Fatalf("the holder sees %v rows, want 2", got[0][0])
	}
	if _, err := os.Stat(path + "-shm"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a -shm file exists (%v); with exclusive locking the log's index is in memory", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, path, false, exclusiveOpts()...)
	if got := queryRows(t, c, "SELECT count(*) FROM t"); got[0][0] != int64(2) {
		t.Fatalf("after the holder closed, %v rows, want 2", got[0][0])
	}
}

// Closing an exclusive connection leaves the log file in place, empty, so
// the next open does not create it; reopening reads what was committed.
func TestExclusiveKeepsAnEmptyLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	for i := range 3 {
		c := openTest(t, path, true, exclusiveOpts()...)
		if i == 0 {
			mustExec(t, c, "CREATE TABLE t(x)")
		}
		mustExec(t, c, "INSERT INTO t VALUES (?)", int64(i))
		if got := queryRows(t, c, "PRAGMA journal_mode"); got[0][0] != "wal" {
			t.Fatalf("journal_mode %v, want wal", got[0][0])
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil || fi.Size() != 0 {
			t.Fatalf("after close %d the log is %v (%v), want an empty file", i, fi, err)
		}
		if _, err := os.Stat(path + "-shm"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a -shm file exists after close %d (%v)", i, err)
		}
	}
	c := openTest(t, path, false, exclusiveOpts()...)
	if got := queryRows(t, c, "SELECT count(*) FROM t"); got[0][0] != int64(3) {
		t.Fatalf("%v rows, want 3", got[0][0])
	}
}

// Exclusive locking needs WAL mode (a rollback-journal commit is captured
// when SQLite drops its lock), and a connection holding its file refuses
// SQL that would let go of it.
func TestExclusiveSettings(t *testing.T) {
	if _, err := New(WithExclusiveLocking()).Open(t.Context(), driver.Config{Path: filepath.Join(t.TempDir(), "r.db")}); err == nil {
		t.Fatal("WithExclusiveLocking opened a rollback-journal database")
	}
	c := openTest(t, filepath.Join(t.TempDir(), "x.db"), true, exclusiveOpts()...)
	for _, sql := range []string{"PRAGMA locking_mode=NORMAL", "PRAGMA main.locking_mode = 'normal'"} {
		if _, err := c.Exec(t.Context(), sql); !errors.Is(err, ErrManagedPragma) {
			t.Errorf("%s: %v, want ErrManagedPragma", sql, err)
		}
	}
	if got := queryRows(t, c, "PRAGMA locking_mode"); got[0][0] != "exclusive" {
		t.Fatalf("locking_mode %v, want exclusive", got[0][0])
	}
	// In-memory databases have no file to hold.
	m, err := New(exclusiveOpts()...).Open(t.Context(), driver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mustExec(t, m, "CREATE TABLE t(x)")
}

// crashWriterEnv makes the test binary a writer that commits rows one by
// one to the database named in it, reporting each commit, until killed.
const crashWriterEnv = "CELLB_WASM_TEST_CRASH_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashWriterEnv); path != "" {
		crashWriter(path)
		return
	}
	os.Exit(m.Run())
}

func crashWriter(path string) {
	ctx := context.Background()
	c, err := New(exclusiveOpts(WithPragmas("synchronous=NORMAL"))...).Open(ctx, driver.Config{Path: path, PageCapture: true})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB)"); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 1; ; i++ {
		if _, err := c.Exec(ctx, "INSERT INTO t VALUES (?, randomblob(3000))", int64(i)); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(i)
	}
}

// A process killed while it writes in exclusive mode leaves its log
// behind (and no -shm file); the next exclusive open replays it: every
// commit the writer reported is there, the database is intact, and it
// takes new writes.
func TestExclusiveRecoversALeftoverLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	last := 0
	for sc.Scan() && last < 300 {
		if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			last = n
		} else {
			t.Fatalf("writer: %s", sc.Text())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if last < 300 {
		t.Fatalf("the writer reported %d commits before it stopped", last)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no leftover log to recover (%v, %v)", fi, err)
	}
	if _, err := os.Stat(path + "-shm"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the writer left a -shm file (%v)", err)
	}
	c := openTest(t, path, true, exclusiveOpts()...)
	got := queryRows(t, c, "SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM t")[0]
	n, hi := got[0].(int64), got[2].(int64)
	if n < int64(last) || n != hi || got[1] != int64(1) {
		t.Fatalf("after the crash: %d rows, ids %v..%v; the writer reported %d commits", n, got[1], hi, last)
	}
	if ic := queryRows(t, c, "PRAGMA integrity_check"); ic[0][0] != "ok" {
		t.Fatalf("integrity_check: %v", ic)
	}
	mustExec(t, c, "INSERT INTO t VALUES (?, 'after')", hi+1)
	if _, err := c.TakeCommits(t.Context()); err != nil {
		t.Fatalf("capture after recovery: %v", err)
	}
}
