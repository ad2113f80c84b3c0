package wasm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3"
)

// replay applies commits to img the way a log consumer would.
func replay(t *testing.T, img []byte, commits []driver.CapturedCommit) []byte {
	t.Helper()
	for i, c := range commits {
		if c.PageSize < minPageSize || c.PageSize > maxPageSize {
			t.Fatalf("commit %d: page size %d", i, c.PageSize)
		}
		size := int(c.PageCount) * c.PageSize
		if len(img) > size {
			img = img[:size]
		} else {
			img = append(img, make([]byte, size-len(img))...)
		}
		var last uint32
		for _, p := range c.Pages {
			if p.Pgno <= last {
				t.Fatalf("commit %d: page %d after page %d", i, p.Pgno, last)
			}
			last = p.Pgno
			if p.Pgno == 0 || p.Pgno > c.PageCount {
				t.Fatalf("commit %d: page %d outside 1..%d", i, p.Pgno, c.PageCount)
			}
			if len(p.Data) != c.PageSize {
				t.Fatalf("commit %d: page %d has %d bytes", i, p.Pgno, len(p.Data))
			}
			copy(img[int(p.Pgno-1)*c.PageSize:], p.Data)
		}
	}
	return img
}

// captureChecker follows a connection: after each step, the commits taken
// replayed onto the previous image must give the current image.
type captureChecker struct {
	t   *testing.T
	c   *Conn
	img []byte
}

func newChecker(t *testing.T, c *Conn) *captureChecker {
	t.Helper()
	if _, err := c.TakeCommits(t.Context()); err != nil {
		t.Fatal(err)
	}
	img, err := c.Serialize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &captureChecker{t: t, c: c, img: img}
}

// step checks the commits since the last step; want is their expected
// number (-1: any).
func (k *captureChecker) step(what string, want int) []driver.CapturedCommit {
	k.t.Helper()
	commits, err := k.c.TakeCommits(k.t.Context())
	if err != nil {
		k.t.Fatalf("%s: TakeCommits: %v", what, err)
	}
	if want >= 0 && len(commits) != want {
		k.t.Fatalf("%s: %d commits, want %d", what, len(commits), want)
	}
	now, err := k.c.Serialize(k.t.Context())
	if err != nil {
		k.t.Fatalf("%s: Serialize: %v", what, err)
	}
	got := replay(k.t, bytes.Clone(k.img), commits)
	if !bytes.Equal(got, now) {
		k.t.Fatalf("%s: replaying %d commits gives %d bytes that differ from the %d-byte image (first difference at %d)",
			what, len(commits), len(got), len(now), firstDiff(got, now))
	}
	k.img = now
	return commits
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestCaptureReplaysExactly(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		c := k.open(t, true)
		chk := newChecker(t, c)

		mustExec(t, c, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
		chk.step("first CREATE on an empty database", 1)

		mustExec(t, c, "INSERT INTO t(v) VALUES ('a')")
		mustExec(t, c, "INSERT INTO t(v) VALUES ('b')")
		chk.step("two autocommit inserts", 2)

		mustExec(t, c, "INSERT INTO t(v) VALUES ('c'); INSERT INTO t(v) VALUES ('d')")
		chk.step("one Exec, two autocommit statements", 2)

		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			mustExec(t, c, "INSERT INTO t(v) VALUES (?)", strings.Repeat("x", i))
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		chk.step("a 500-row transaction", 1)

		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "DELETE FROM t")
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		chk.step("a rolled-back transaction", 0)

		mustExec(t, c, "SAVEPOINT a; INSERT INTO t(v) VALUES ('s'); ROLLBACK TO a; INSERT INTO t(v) VALUES ('kept'); RELEASE a")
		chk.step("a savepoint rolled back inside a committed transaction", 1)

		mustExec(t, c, "DELETE FROM t WHERE id % 2 = 0")
		chk.step("delete half", 1)

		mustExec(t, c, "VACUUM")
		commits := chk.step("VACUUM shrinking the database", 1)
		if commits[0].PageCount >= uint32(len(chk.img)/commits[0].PageSize)+1 {
			t.Fatalf("VACUUM did not shrink: %d pages", commits[0].PageCount)
		}

		mustExec(t, c, "PRAGMA page_size=1024; VACUUM")
		commits = chk.step("VACUUM to a new page size", 1)
		// memdb (an in-memory file) and WAL mode keep their page size.
		if k.path != "" && !k.wal() && commits[0].PageSize != 1024 {
			t.Fatalf("page size after VACUUM: %d", commits[0].PageSize)
		}

		mustExec(t, c, "PRAGMA user_version=42")
		chk.step("PRAGMA user_version", 1)

		mustExec(t, c, "DROP TABLE t")
		chk.step("DROP TABLE", 1)
	})
}

// A transaction larger than the page cache spills pages into the file
// before it ends; rolling it back writes the old pages back. Neither may
// show up as a commit, and a spilled transaction that commits must.
func TestCaptureSpilledTransactions(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		c := k.open(t, true, WithPragmas("cache_size=10"))
		mustExec(t, c, "CREATE TABLE t(v)")
		mustExec(t, c, "INSERT INTO t VALUES (randomblob(3000))")
		chk := newChecker(t, c)
		big := func() {
			if err := c.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "UPDATE t SET v = randomblob(3000)")
			for range 200 {
				mustExec(t, c, "INSERT INTO t VALUES (randomblob(3000))")
			}
		}
		// In WAL mode the spill goes to the log.
		spillFile := k.path
		if k.wal() {
			spillFile += "-wal"
		}
		before := fileSize(t, spillFile)
		big()
		if k.path != "" && fileSize(t, spillFile) <= before {
			t.Fatal("the transaction did not spill into the file; the case is not exercised")
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		chk.step("a spilled transaction rolled back", 0)

		big()
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		chk.step("a spilled transaction committed", 1)

		// A failing autocommit statement rolls back its implicit
		// transaction after spilling.
		mustExec(t, c, "CREATE TABLE u(id INTEGER PRIMARY KEY, v)")
		chk.step("CREATE TABLE u", 1)
		_, err := c.Exec(ctx, "INSERT INTO u SELECT 1 + (rowid % 100), randomblob(3000) FROM t")
		if err == nil {
			t.Fatal("the duplicate-key insert succeeded")
		}
		chk.step("a failed spilled statement", 0)
	})
}

func TestCaptureAfterRestore(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		src := openTest(t, "", false)
		mustExec(t, src, "CREATE TABLE t(v); INSERT INTO t VALUES ('from the image')")
		img, err := src.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}

		c := k.open(t, true)
		mustExec(t, c, "CREATE TABLE old(v); INSERT INTO old VALUES (1)")
		if err := c.Restore(ctx, img); err != nil {
			t.Fatal(err)
		}
		got, err := c.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(withJournalMode(got, 0), withJournalMode(img, 0)) {
			t.Fatal("Serialize after Restore differs from the image")
		}
		if cs, err := c.TakeCommits(ctx); err != nil || len(cs) != 0 {
			t.Fatalf("after Restore: %d commits, %v; want none", len(cs), err)
		}
		chk := newChecker(t, c)
		mustExec(t, c, "INSERT INTO t VALUES ('after')")
		chk.step("insert after Restore", 1)
	})
}

func TestRestoreWALImage(t *testing.T) {
	ctx := t.Context()
	// A WAL-mode image as celld writes it: header bytes 18/19 = 2.
	src := openTest(t, "", false)
	mustExec(t, src, "CREATE TABLE t(v); INSERT INTO t VALUES ('wal')")
	img, err := src.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	walImg := bytes.Clone(img)
	walImg[offWriteVersion], walImg[offReadVersion] = journalModeWAL, journalModeWAL

	eachKind(t, func(t *testing.T, k dbKind) {
		c := k.open(t, true)
		if err := c.Restore(ctx, walImg); err != nil {
			t.Fatal(err)
		}
		if got := queryRows(t, c, "SELECT v FROM t"); len(got) != 1 || got[0][0] != "wal" {
			t.Fatalf("rows after restoring a WAL image: %v", got)
		}
		// The image takes the connection's journal mode.
		want := byte(journalModeRollback)
		if k.wal() {
			want = journalModeWAL
		}
		if mode := queryRows(t, c, "PRAGMA journal_mode"); (mode[0][0] == "wal") != k.wal() {
			t.Fatalf("the restored database is in journal mode %v", mode[0][0])
		}
		now, err := c.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now[offWriteVersion] != want || now[offReadVersion] != want {
			t.Fatalf("header bytes 18/19 are %d/%d, want %d", now[offWriteVersion], now[offReadVersion], want)
		}
		chk := newChecker(t, c)
		mustExec(t, c, "INSERT INTO t VALUES ('more')")
		chk.step("insert after restoring a WAL image", 1)
	})
	if walImg[offWriteVersion] != journalModeWAL {
		t.Fatal("Restore modified the caller's image")
	}
}

// A WAL-mode file left by another program (with committed frames still in
// its -wal file) opens with its committed data: a rollback-journal
// connection converts it, a WAL connection carries on with the log.
func TestOpenWALFile(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		if k.path == "" {
			t.Skip("a file case")
		}
		writeWALDatabase(t, k.path)
		c := k.open(t, true)
		if got := queryRows(t, c, "SELECT count(*) FROM t"); got[0][0] != int64(3) {
			t.Fatalf("rows: %v", got)
		}
		mode := queryRows(t, c, "PRAGMA journal_mode")[0][0]
		if want := map[bool]string{true: "wal", false: string(DefaultJournalMode)}[k.wal()]; mode != want {
			t.Fatalf("journal_mode %v, want %s", mode, want)
		}
		chk := newChecker(t, c)
		mustExec(t, c, "INSERT INTO t VALUES (4)")
		chk.step("insert into a database opened from a WAL file", 1)
	})
}

func TestGuardRefusesWAL(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		c := k.open(t, true)
		refused := []string{"PRAGMA journal_mode=WAL", "PRAGMA main.journal_mode = 'wal'", "PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=off"}
		allowed := []string{"PRAGMA journal_mode", "PRAGMA locking_mode=NORMAL", "PRAGMA journal_mode=truncate"}
		if k.wal() {
			refused = []string{"PRAGMA journal_mode=DELETE", "PRAGMA main.journal_mode = 'persist'", "PRAGMA locking_mode=EXCLUSIVE"}
			allowed = []string{"PRAGMA journal_mode", "PRAGMA locking_mode=NORMAL", "PRAGMA journal_mode=wal"}
		}
		for _, sql := range refused {
			_, err := c.Exec(t.Context(), sql)
			if !errors.Is(err, ErrManagedPragma) || !errors.Is(err, driver.ErrNotAuthorized) {
				t.Errorf("%s: %v, want ErrManagedPragma", sql, err)
			}
		}
		for _, sql := range allowed {
			mustExec(t, c, sql)
		}
	})
	if _, err := New(WithPragmas("journal_mode=wal")).Open(t.Context(), driver.Config{Path: filepath.Join(t.TempDir(), "x")}); !errors.Is(err, ErrManagedPragma) {
		t.Fatalf("Open with journal_mode=wal in the pragmas: %v", err)
	}
}

func TestTakeCommitsWithoutCapture(t *testing.T) {
	c := openTest(t, "", false)
	if _, err := c.TakeCommits(t.Context()); !errors.Is(err, driver.ErrUnsupported) {
		t.Fatalf("TakeCommits without capture: %v", err)
	}
}

func TestRestoreRejectsBadImages(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		c := k.open(t, true)
		mustExec(t, c, "CREATE TABLE keep(v); INSERT INTO keep VALUES ('kept')")
		chk := newChecker(t, c)
		good, err := c.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		corrupt := bytes.Clone(good)
		for i := 100; i < len(corrupt); i++ {
			corrupt[i] = 0xA5 // keep the header, wreck the schema page and beyond
		}
		bad := map[string][]byte{
			"short":           good[:50],
			"no magic":        append([]byte("not a database!!"), good[16:]...),
			"partial page":    good[:len(good)-1],
			"bad page size":   withByte(good, offPageSize+1, 3),
			"corrupt content": corrupt,
		}
		for name, img := range bad {
			err := c.Restore(ctx, img)
			if !errors.Is(err, ErrBadImage) {
				t.Errorf("%s: Restore = %v, want ErrBadImage", name, err)
			}
		}
		if got := queryRows(t, c, "SELECT v FROM keep"); len(got) != 1 || got[0][0] != "kept" {
			t.Fatalf("the database changed after bad restores: %v", got)
		}
		chk.step("after refused restores", 0)
		if k.path != "" {
			matches, _ := filepath.Glob(k.path + ".restore-*")
			if len(matches) != 0 {
				t.Fatalf("temporary files left: %v", matches)
			}
		}
	})
}

func withByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

func TestRestoreEmptyImage(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		c := k.open(t, true)
		mustExec(t, c, "CREATE TABLE t(v)")
		if err := c.Restore(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		// A WAL database records its mode in the header, so it has a page.
		if n, err := c.PageCount(t.Context()); err != nil || n > 1 || (n == 1) != k.wal() {
			t.Fatalf("page count after restoring nothing: %d, %v", n, err)
		}
		chk := newChecker(t, c)
		mustExec(t, c, "CREATE TABLE again(v)")
		chk.step("first table after an empty restore", 1)
	})
}

func TestSerializeInTransaction(t *testing.T) {
	c := openTest(t, "", true)
	if err := c.Begin(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Serialize(t.Context()); !errors.Is(err, ErrInTransaction) {
		t.Fatalf("Serialize in a transaction: %v", err)
	}
	if err := c.Restore(t.Context(), nil); !errors.Is(err, ErrInTransaction) {
		t.Fatalf("Restore in a transaction: %v", err)
	}
}

func TestCaptureLargeDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	c := openTest(t, filepath.Join(t.TempDir(), "db"), true)
	chk := newChecker(t, c)
	if err := c.Begin(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "CREATE TABLE t(v)")
	for i := range 2000 {
		mustExec(t, c, "INSERT INTO t VALUES (?)", fmt.Sprint(i, strings.Repeat("y", 900)))
	}
	if err := c.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	commits := chk.step("a 2000-row first transaction", 1)
	if n := len(commits[0].Pages); n < 400 {
		t.Fatalf("only %d pages captured", n)
	}
}

// writeWALDatabase leaves at path a WAL-mode database whose last commits
// are only in path-wal, as a crashed WAL writer would.
func writeWALDatabase(t *testing.T, path string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.sqlite")
	db, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(v); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("the source WAL is empty")
		}
		if err := os.WriteFile(path+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	if path == "" {
		return 0
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// SQLite does not journal free pages it reuses, so rolling back a
// transaction that spilled into them leaves their bytes changed; the
// driver puts them back so a rollback leaves the file exactly as it was.
func TestRollbackRestoresFreePages(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		c := k.open(t, true, WithPragmas("cache_size=10"))
		mustExec(t, c, "CREATE TABLE t(v)")
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		for range 300 {
			mustExec(t, c, "INSERT INTO t VALUES (randomblob(2000))")
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "DELETE FROM t WHERE rowid > 20") // leaves many free pages
		if n := queryRows(t, c, "PRAGMA freelist_count"); n[0][0].(int64) < 50 {
			t.Fatalf("freelist_count %v: the case needs free pages", n)
		}
		chk := newChecker(t, c)
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		for range 300 {
			mustExec(t, c, "INSERT INTO t VALUES (randomblob(2000))")
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		chk.step("a spilled transaction into free pages, rolled back", 0)
	})
}

// withJournalMode sets header bytes 18/19 of a copy of img (0: leave).
func withJournalMode(img []byte, mode byte) []byte {
	img = bytes.Clone(img)
	if len(img) > offReadVersion {
		img[offWriteVersion], img[offReadVersion] = mode, mode
	}
	return img
}

// The very first transaction on an empty file may spill and roll back,
// leaving the file empty again: no commit, and capture carries on.
func TestFirstTransactionRolledBack(t *testing.T) {
	eachKind(t, func(t *testing.T, k dbKind) {
		ctx := t.Context()
		c := k.open(t, true, WithPragmas("cache_size=10"))
		chk := newChecker(t, c)
		if err := c.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "CREATE TABLE t(v)")
		for range 200 {
			mustExec(t, c, "INSERT INTO t VALUES (randomblob(3000))")
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		chk.step("a spilled first transaction rolled back", 0)
		mustExec(t, c, "CREATE TABLE t(v)")
		chk.step("the first table after it", 1)
	})
}
