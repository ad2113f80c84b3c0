package modernc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

// walImage is the image of a small WAL-mode database, as celld stores it.
func walImage(t testing.TB) []byte {
	t.Helper()
	c := openWith(t, Options{}, "source.db", false)
	mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'one'), (2, randomblob(9000))")
	img := serializeT(t, c)
	if img[18] != 2 || img[19] != 2 {
		t.Fatalf("a file database's image has format bytes %d/%d, want 2/2 (WAL)", img[18], img[19])
	}
	return img
}

func TestRestoreWALImage(t *testing.T) {
	ctx := context.Background()
	img := walImage(t)
	for _, name := range []string{"restored.db", ""} {
		c := openT(t, name, name != "")
		mustExec(t, c, "CREATE TABLE old(x); INSERT INTO old VALUES (1)")
		if err := c.Restore(ctx, img); err != nil {
			t.Fatalf("Restore(%q): %v", name, err)
		}
		if got := queryAll(t, c, "SELECT k, typeof(v) FROM t ORDER BY k"); !reflect.DeepEqual(got, [][]any{{int64(1), "text"}, {int64(2), "blob"}}) {
			t.Errorf("%q: restored rows %v", name, got)
		}
		if _, err := c.Query(ctx, "SELECT * FROM old"); err == nil {
			t.Errorf("%q: the old table survived Restore", name)
		}
		mustExec(t, c, "INSERT INTO t VALUES (3, 'after')")
		after := serializeT(t, c)
		if name != "" {
			if after[18] != 2 {
				t.Errorf("the restored file is not in WAL mode (byte 18 = %d)", after[18])
			}
			if commits := takeT(t, c); !bytes.Equal(replay(img, commits), after) {
				t.Error("capture after Restore does not replay onto the restored image")
			}
		} else if after[18] != 1 {
			t.Errorf("the restored in-memory database has format byte %d, want 1", after[18])
		}
	}
}

func TestRestoreRollbackImageIntoAFile(t *testing.T) {
	ctx := context.Background()
	mem := openT(t, "", false)
	mustExec(t, mem, "CREATE TABLE t(v); INSERT INTO t VALUES ('from memory')")
	img := serializeT(t, mem)
	if img[18] != 1 {
		t.Fatalf("in-memory image has format byte %d", img[18])
	}
	c := openT(t, "db", true)
	if err := c.Restore(ctx, img); err != nil {
		t.Fatal(err)
	}
	if got := queryAll(t, c, "SELECT v FROM t"); len(got) != 1 || got[0][0] != "from memory" {
		t.Fatalf("rows after Restore: %v", got)
	}
	// Switching the file to WAL happened while opening, before capture
	// started: the image as restored is the capture's starting point.
	f := follow(t, c)
	mustExec(t, c, "INSERT INTO t VALUES ('next')")
	f.check("after restore", 1)
}

func TestRestoreEmptyImage(t *testing.T) {
	for _, name := range []string{"db", ""} {
		c := openT(t, name, false)
		mustExec(t, c, "CREATE TABLE t(v)")
		if err := c.Restore(context.Background(), nil); err != nil {
			t.Fatalf("Restore(%q, empty): %v", name, err)
		}
		if got := queryAll(t, c, "SELECT count(*) FROM sqlite_schema")[0][0]; got != int64(0) {
			t.Errorf("%q: %v schema entries after restoring an empty image", name, got)
		}
	}
}

func TestRestoreRejectsBadImagesAndKeepsTheDatabase(t *testing.T) {
	ctx := context.Background()
	good := walImage(t)
	truncated := good[:len(good)-100]
	badMagic := bytes.Clone(good)
	badMagic[0] = 'X'
	badPageSize := bytes.Clone(good)
	badPageSize[16], badPageSize[17] = 0x03, 0x00
	badFormat := bytes.Clone(good)
	badFormat[18] = 7
	wrongCount := bytes.Clone(good)
	wrongCount[31]++
	garbageSchema := bytes.Clone(good)
	for i := 100; i < 4096; i++ {
		garbageSchema[i] = 0xa5
	}
	for name, img := range map[string][]byte{
		"short": good[:50], "truncated": truncated, "magic": badMagic, "page size": badPageSize,
		"format": badFormat, "page count": wrongCount, "schema page": garbageSchema,
	} {
		for _, db := range []string{"db", ""} {
			c := openT(t, db, db != "")
			mustExec(t, c, "CREATE TABLE keep(v); INSERT INTO keep VALUES ('kept')")
			var before []byte
			if db != "" {
				f := follow(t, c)
				before = f.base
			}
			err := c.Restore(ctx, img)
			if !errors.Is(err, ErrInvalidImage) {
				t.Errorf("%s (%q): Restore = %v, want ErrInvalidImage", name, db, err)
			}
			if got := queryAll(t, c, "SELECT v FROM keep"); len(got) != 1 || got[0][0] != "kept" {
				t.Errorf("%s (%q): the database changed: %v", name, db, got)
			}
			if db != "" {
				if commits := takeT(t, c); len(commits) != 0 || !bytes.Equal(serializeT(t, c), before) {
					t.Errorf("%s: a refused Restore disturbed capture", name)
				}
			}
		}
	}
}

func TestRestoreInsideTransactionIsRefused(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	mustExec(t, c, "CREATE TABLE t(v)")
	if err := c.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(ctx, nil); !errors.Is(err, ErrInTransaction) {
		t.Errorf("Restore in a transaction = %v, want ErrInTransaction", err)
	}
	if _, err := c.Serialize(ctx); !errors.Is(err, ErrInTransaction) {
		t.Errorf("Serialize in a transaction = %v, want ErrInTransaction", err)
	}
}

func TestRestoreLeavesNoStrayFiles(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	dir := filepath.Dir(c.path)
	if err := os.Chmod(c.path, 0o640); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "CREATE TABLE t(v); INSERT INTO t VALUES (1)")
	if err := c.Restore(ctx, walImage(t)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "db" && n != "db-wal" {
			t.Errorf("stray file %s after Restore", n)
		}
	}
	fi, err := os.Stat(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("Restore changed the file mode to %v", fi.Mode().Perm())
	}
}

func TestRestoreEndsOpenRows(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	mustExec(t, c, "CREATE TABLE t(v); INSERT INTO t VALUES (1), (2)")
	r, err := c.Query(ctx, "SELECT v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if err := c.Restore(ctx, walImage(t)); err != nil {
		t.Fatal(err)
	}
	if r.Next() {
		t.Error("Rows of the replaced database kept returning rows")
	}
	if !errors.Is(r.Err(), ErrClosed) {
		t.Errorf("Rows.Err after Restore = %v, want ErrClosed", r.Err())
	}
	if err := r.Close(); err != nil {
		t.Error(err)
	}
}

func TestSerializeIsStableAndExact(t *testing.T) {
	c := openT(t, "db", false)
	mustExec(t, c, "CREATE TABLE t(v); INSERT INTO t VALUES (randomblob(20000))")
	a := serializeT(t, c)
	b := serializeT(t, c)
	if !bytes.Equal(a, b) {
		t.Fatal("two Serialize calls with no write between differ")
	}
	if n, _ := c.PageCount(context.Background()); int64(len(a)) != n*4096 {
		t.Fatalf("image of %d bytes for %d pages", len(a), n)
	}
	// The image is what the file holds once checkpointed.
	if err := c.Checkpoint(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, a) {
		t.Fatal("Serialize differs from the checkpointed file")
	}
}

// FuzzRestore feeds arbitrary images to Restore: each is either refused
// with ErrInvalidImage, leaving the database as it was, or restored into a
// database SQLite can read.
func FuzzRestore(f *testing.F) {
	good := walImage(f)
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:100])
	f.Add(good[:4096])
	mangled := bytes.Clone(good)
	mangled[4096+7] ^= 0xff
	f.Add(mangled)
	c := openT(f, "", false)
	f.Fuzz(func(t *testing.T, img []byte) {
		ctx := context.Background()
		if err := c.Restore(ctx, good); err != nil {
			t.Fatal(err)
		}
		before := serializeT(t, c)
		err := c.Restore(ctx, img)
		if err != nil {
			if !errors.Is(err, ErrInvalidImage) {
				t.Fatalf("Restore failed with %v, want ErrInvalidImage", err)
			}
			if !bytes.Equal(serializeT(t, c), before) {
				t.Fatal("a refused image changed the database")
			}
			return
		}
		r, err := c.Query(ctx, "SELECT count(*) FROM sqlite_schema")
		if err != nil {
			t.Fatalf("a restored image cannot be read: %v", err)
		}
		r.Close()
	})
}

// WriteImage streams exactly Serialize's bytes: a file database with
// commits still in its WAL, an in-memory one, an empty one, under an
// authorizer that denies everything.
func TestWriteImageIsSerialize(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"stream.db", "", "empty.db"} {
		c := openT(t, name, false)
		if name != "empty.db" {
			mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, randomblob(50000))")
			mustExec(t, c, "UPDATE t SET v = randomblob(700) WHERE k = 1")
		}
		if err := c.SetAuthorizer(func(driver.Action, string, string, string, string) driver.AuthResult { return driver.AuthDeny }); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := c.WriteImage(ctx, &buf)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if img := serializeT(t, c); !bytes.Equal(buf.Bytes(), img) || n != int64(len(img)) {
			t.Fatalf("%q: WriteImage wrote %d bytes (said %d), Serialize gives %d; equal %v", name, buf.Len(), n, len(img), bytes.Equal(buf.Bytes(), img))
		}
	}
}

// RestoreWith checks the file as Restore checks an image: a bad header, or
// a header over pages SQLite cannot read, is refused with ErrInvalidImage
// and the database is left as it was; a good image is installed.
func TestRestoreWithChecksTheFile(t *testing.T) {
	ctx := context.Background()
	good := walImage(t)
	broken := bytes.Clone(good)
	for i := 100; i < len(broken); i++ {
		broken[i] = 0xff
	}
	for _, name := range []string{"with.db", ""} {
		c := openT(t, name, false)
		mustExec(t, c, "CREATE TABLE keep(x); INSERT INTO keep VALUES (7)")
		before := serializeT(t, c)
		for _, bad := range [][]byte{[]byte("not a database at all"), broken} {
			err := c.RestoreWith(ctx, func(w driver.ImageFile) error {
				_, err := w.WriteAt(bad, 0)
				return err
			})
			if !errors.Is(err, ErrInvalidImage) {
				t.Fatalf("%q: RestoreWith of a bad image: %v", name, err)
			}
			if got := serializeT(t, c); !bytes.Equal(got, before) {
				t.Fatalf("%q: a refused RestoreWith changed the database", name)
			}
		}
		if err := c.RestoreWith(ctx, func(w driver.ImageFile) error {
			_, err := w.WriteAt(good, 0)
			return err
		}); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if got := queryAll(t, c, "SELECT count(*) FROM t"); !reflect.DeepEqual(got, [][]any{{int64(2)}}) {
			t.Fatalf("%q: restored rows %v", name, got)
		}
	}
}
