package modernc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

const sessionSchema = `
	CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, body BLOB, score REAL);
	CREATE TABLE pairs(a TEXT, b INTEGER, v BLOB, PRIMARY KEY (a, b));
	CREATE TABLE nokey(x);`

// dumpTables is every row of the session test tables, in key order.
func dumpTables(t *testing.T, c *Conn) map[string][][]any {
	return map[string][][]any{
		"items": queryAll(t, c, "SELECT * FROM items ORDER BY id"),
		"pairs": queryAll(t, c, "SELECT * FROM pairs ORDER BY a, b"),
	}
}

// copyOf opens a second database holding src's current image.
func copyOf(t *testing.T, src *Conn, name string) *Conn {
	t.Helper()
	dst := openT(t, name, false)
	if err := dst.Restore(context.Background(), serializeT(t, src)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return dst
}

func startT(t *testing.T, c *Conn, tables ...string) driver.Session {
	t.Helper()
	s, err := c.StartSession(context.Background(), tables...)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func changesetT(t *testing.T, s driver.Session) []byte {
	t.Helper()
	cs, err := s.Changeset()
	if err != nil {
		t.Fatalf("Changeset: %v", err)
	}
	return cs
}

func TestChangesetReproducesChangesOnACopy(t *testing.T) {
	for _, mem := range []bool{false, true} {
		t.Run(fmt.Sprintf("memory=%v", mem), func(t *testing.T) {
			ctx := context.Background()
			name := "src.db"
			if mem {
				name = ""
			}
			src := openT(t, name, false)
			mustExec(t, src, sessionSchema)
			mustExec(t, src, "INSERT INTO items VALUES (1, 'one', x'00ff00', 1.5), (2, 'two', NULL, 2.5), (3, 'three', zeroblob(5000), 3.5)")
			mustExec(t, src, "INSERT INTO pairs VALUES ('a', 1, x'01'), ('a', 2, x'02'), ('b', 1, NULL)")
			dst := copyOf(t, src, "dst.db")

			s := startT(t, src)
			rng := rand.New(rand.NewPCG(1, 2))
			big := make([]byte, 20000) // spans overflow pages
			for i := range big {
				big[i] = byte(rng.IntN(256))
			}
			mustExec(t, src, "INSERT INTO items VALUES (4, 'four', ?, NULL)", big)
			mustExec(t, src, "INSERT INTO items(name, body) VALUES ('empty blob', ?)", []byte{})
			mustExec(t, src, "UPDATE items SET body = ?, score = score * 2 WHERE id = 1", []byte("new\x00bytes"))
			mustExec(t, src, "UPDATE items SET name = NULL WHERE id = 2")
			mustExec(t, src, "DELETE FROM items WHERE id = 3")
			mustExec(t, src, "UPDATE pairs SET v = ? WHERE a = 'a' AND b = 2", big[:3000])
			mustExec(t, src, "DELETE FROM pairs WHERE a = 'b'")
			mustExec(t, src, "UPDATE items SET id = 40 WHERE id = 4") // a key change: delete + insert
			mustExec(t, src, "INSERT INTO nokey VALUES (1)")          // no primary key: not recorded
			// A rolled-back transaction leaves nothing in the changeset.
			if err := src.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			mustExec(t, src, "DELETE FROM items")
			if err := src.Rollback(ctx); err != nil {
				t.Fatal(err)
			}

			cs := changesetT(t, s)
			if len(cs) == 0 {
				t.Fatal("the changeset is empty")
			}
			if err := dst.ApplyChangeset(ctx, cs); err != nil {
				t.Fatalf("ApplyChangeset: %v", err)
			}
			got, want := dumpTables(t, dst), dumpTables(t, src)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the copy differs after applying the changeset:\n got %v\nwant %v", got, want)
			}
			if rows := queryAll(t, dst, "SELECT count(*) FROM nokey"); rows[0][0] != int64(0) {
				t.Errorf("a change to a table without a primary key was applied: %v", rows)
			}
			// The blob kept every byte, and an empty blob stayed a blob.
			rows := queryAll(t, dst, "SELECT body FROM items WHERE id = 40")
			if !bytes.Equal(rows[0][0].([]byte), big) {
				t.Error("the 20000-byte blob changed on the way")
			}
			rows = queryAll(t, dst, "SELECT typeof(body), length(body) FROM items WHERE name = 'empty blob'")
			if rows[0][0] != "blob" || rows[0][1] != int64(0) {
				t.Errorf("the empty blob arrived as %v", rows[0])
			}
		})
	}
}

func TestSessionAttachesOnlyNamedTables(t *testing.T) {
	src := openT(t, "src.db", false)
	mustExec(t, src, sessionSchema)
	dst := copyOf(t, src, "dst.db")
	s := startT(t, src, "pairs")
	mustExec(t, src, "INSERT INTO items VALUES (1, 'x', NULL, 0)")
	mustExec(t, src, "INSERT INTO pairs VALUES ('p', 1, x'aa')")
	if err := dst.ApplyChangeset(context.Background(), changesetT(t, s)); err != nil {
		t.Fatal(err)
	}
	if got := queryAll(t, dst, "SELECT count(*) FROM items")[0][0]; got != int64(0) {
		t.Errorf("items has %v rows on the copy; the session did not name it", got)
	}
	if got := queryAll(t, dst, "SELECT count(*) FROM pairs")[0][0]; got != int64(1) {
		t.Errorf("pairs has %v rows on the copy, want 1", got)
	}
}

func TestSessionRecordsTablesCreatedLater(t *testing.T) {
	src := openT(t, "src.db", false)
	dst := copyOf(t, src, "dst.db")
	s := startT(t, src)
	mustExec(t, src, "CREATE TABLE later(k INTEGER PRIMARY KEY, v)")
	mustExec(t, src, "INSERT INTO later VALUES (1, 'x')")
	mustExec(t, dst, "CREATE TABLE later(k INTEGER PRIMARY KEY, v)") // changesets carry rows, not schema
	if err := dst.ApplyChangeset(context.Background(), changesetT(t, s)); err != nil {
		t.Fatal(err)
	}
	if got := queryAll(t, dst, "SELECT v FROM later"); len(got) != 1 || got[0][0] != "x" {
		t.Errorf("later holds %v on the copy", got)
	}
}

func TestApplyChangesetConflictAbortsEverything(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		prepare string // run on the copy before applying
		change  string // recorded on the source
		kind    ConflictKind
		op      string
	}{
		{"insert over an existing key", "INSERT INTO items VALUES (9, 'theirs', NULL, 0)", "INSERT INTO items VALUES (9, 'ours', NULL, 0)", ConflictConflict, "INSERT"},
		// An update carries the old values of the columns it changes.
		{"update of a changed row", "UPDATE items SET score = 99 WHERE id = 1", "UPDATE items SET score = 7 WHERE id = 1", ConflictData, "UPDATE"},
		{"delete of a missing row", "DELETE FROM items WHERE id = 1", "DELETE FROM items WHERE id = 1", ConflictNotFound, "DELETE"},
		{"update of a missing row", "DELETE FROM items WHERE id = 1", "UPDATE items SET score = 7 WHERE id = 1", ConflictNotFound, "UPDATE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := openT(t, "src.db", false)
			mustExec(t, src, sessionSchema)
			mustExec(t, src, "INSERT INTO items VALUES (1, 'one', NULL, 1), (2, 'two', NULL, 2)")
			dst := copyOf(t, src, "dst.db")
			mustExec(t, dst, tc.prepare)
			before := dumpTables(t, dst)

			s := startT(t, src)
			mustExec(t, src, "INSERT INTO items VALUES (3, 'applied first', NULL, 3)") // must be undone too
			mustExec(t, src, tc.change)
			err := dst.ApplyChangeset(ctx, changesetT(t, s))
			var ce *ConflictError
			switch {
			case !errors.As(err, &ce):
				t.Fatalf("ApplyChangeset = %v, want a *ConflictError", err)
			case !errors.Is(err, ErrChangesetConflict):
				t.Errorf("errors.Is(%v, ErrChangesetConflict) is false", err)
			case ce.Kind != tc.kind || ce.Table != "items" || ce.Op != tc.op:
				t.Errorf("conflict = %+v, want kind %v on %s into items", *ce, tc.kind, tc.op)
			}
			if after := dumpTables(t, dst); !reflect.DeepEqual(after, before) {
				t.Errorf("a failed apply changed the copy:\nbefore %v\n after %v", before, after)
			}
			if dst.InTransaction() {
				t.Error("a failed apply left a transaction open")
			}
		})
	}
}

func TestApplyChangesetRejectsGarbage(t *testing.T) {
	c := openT(t, "db", false)
	mustExec(t, c, sessionSchema+"; INSERT INTO items VALUES (1, 'one', NULL, 1)")
	before := dumpTables(t, c)
	for _, cs := range [][]byte{{'T'}, []byte("not a changeset at all"), {'T', 3, 0, 1, 1}} {
		err := c.ApplyChangeset(context.Background(), cs)
		var se *driver.SQLiteError
		if !errors.As(err, &se) {
			t.Errorf("ApplyChangeset(%q) = %v, want a SQLite error", cs, err)
		}
	}
	if after := dumpTables(t, c); !reflect.DeepEqual(after, before) {
		t.Errorf("garbage changed the database")
	}
}

func TestSessionsUnderStrictAuthorizer(t *testing.T) {
	// The cell's policy denies pragmas to user SQL; the session extension
	// reads table layouts through pragmas of its own, which must still work.
	ctx := context.Background()
	src := openT(t, "src.db", false)
	mustExec(t, src, sessionSchema)
	dst := copyOf(t, src, "dst.db")
	deny := func(a driver.Action, _, _, _, _ string) driver.AuthResult {
		if a == driver.ActionPragma || a == driver.ActionAttach {
			return driver.AuthDeny
		}
		return driver.AuthOK
	}
	for _, c := range []*Conn{src, dst} {
		if err := c.SetAuthorizer(deny); err != nil {
			t.Fatal(err)
		}
	}
	s := startT(t, src)
	mustExec(t, src, "INSERT INTO items VALUES (1, 'x', x'01', 2)")
	mustExec(t, src, "INSERT INTO pairs VALUES ('k', 1, NULL)")
	cs := changesetT(t, s)
	if err := dst.ApplyChangeset(ctx, cs); err != nil {
		t.Fatalf("ApplyChangeset under the strict authorizer: %v", err)
	}
	if got, want := dumpTables(t, dst), dumpTables(t, src); !reflect.DeepEqual(got, want) {
		t.Fatalf("copy differs: %v vs %v", got, want)
	}
	if _, err := src.Exec(ctx, "PRAGMA user_version = 3"); !errors.Is(err, driver.ErrNotAuthorized) {
		t.Errorf("user PRAGMA = %v, want a denial", err)
	}
}

func TestSessionsEndWithTheirConnection(t *testing.T) {
	ctx := context.Background()
	c := openT(t, "db", false)
	mustExec(t, c, sessionSchema)
	s := startT(t, c)
	mustExec(t, c, "INSERT INTO items VALUES (1, 'x', NULL, 0)")
	if err := c.Restore(ctx, serializeT(t, c)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Changeset(); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("Changeset after Restore = %v, want ErrSessionClosed", err)
	}
	s2 := startT(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Changeset(); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("Changeset after Close = %v, want ErrSessionClosed", err)
	}
	if err := s2.Close(); err != nil {
		t.Errorf("closing a session of a closed connection: %v", err)
	}
}

// FuzzApplyChangeset feeds arbitrary bytes to ApplyChangeset on a copy of a
// database: each input either applies or fails, and a failure leaves the
// copy exactly as it was.
func FuzzApplyChangeset(f *testing.F) {
	src := openT(f, "src.db", false)
	mustExec(f, src, sessionSchema+"; INSERT INTO items VALUES (1, 'one', x'01', 1), (2, 'two', NULL, 2); INSERT INTO pairs VALUES ('a', 1, x'aa')")
	base := serializeT(f, src)
	s, err := src.StartSession(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	mustExec(f, src, "INSERT INTO items VALUES (3, 'three', randomblob(300), 3)")
	mustExec(f, src, "UPDATE items SET name = 'uno' WHERE id = 1")
	mustExec(f, src, "DELETE FROM pairs")
	cs, err := s.Changeset()
	if err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add(cs)
	f.Add(cs[:len(cs)/2])
	f.Add([]byte{})
	f.Add([]byte{'T', 2, 0, 0, 0})
	dst := openT(f, "", false)
	f.Fuzz(func(t *testing.T, changeset []byte) {
		ctx := context.Background()
		if err := dst.Restore(ctx, base); err != nil {
			t.Fatal(err)
		}
		before := serializeT(t, dst)
		err := dst.ApplyChangeset(ctx, changeset)
		if dst.InTransaction() {
			t.Fatal("ApplyChangeset left a transaction open")
		}
		if err != nil && !bytes.Equal(serializeT(t, dst), before) {
			t.Fatalf("a failed apply (%v) changed the database", err)
		}
	})
}

func TestApplyChangesetInsideATransactionAndUnderCapture(t *testing.T) {
	ctx := context.Background()
	src := openT(t, "src.db", false)
	mustExec(t, src, sessionSchema)
	img := serializeT(t, src)
	s := startT(t, src)
	mustExec(t, src, "INSERT INTO items VALUES (1, 'x', NULL, 0)")
	good := changesetT(t, s)
	bad := good[:len(good)-3]

	dst := openT(t, "dst.db", true)
	if err := dst.Restore(ctx, img); err != nil {
		t.Fatal(err)
	}
	f := follow(t, dst)
	if err := dst.ApplyChangeset(ctx, bad); err == nil {
		t.Fatal("a cut changeset applied")
	}
	f.check("failed apply", 0) // nothing written, nothing captured
	if err := dst.ApplyChangeset(ctx, good); err != nil {
		t.Fatal(err)
	}
	f.check("apply", 1) // one commit

	// Inside the caller's transaction a failed apply keeps the caller's
	// own writes, and a good one joins the transaction.
	mustExec(t, dst, "DELETE FROM items")
	f.check("delete", 1)
	if err := dst.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, dst, "INSERT INTO pairs VALUES ('mine', 1, NULL)")
	if err := dst.ApplyChangeset(ctx, bad); err == nil {
		t.Fatal("a cut changeset applied")
	}
	if !dst.InTransaction() {
		t.Fatal("a failed apply ended the caller's transaction")
	}
	if err := dst.ApplyChangeset(ctx, good); err != nil {
		t.Fatal(err)
	}
	if err := dst.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.check("transaction", 1)
	if got := queryAll(t, dst, "SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM pairs)")[0]; got[0] != int64(1) || got[1] != int64(1) {
		t.Errorf("after the transaction: %v items and pairs, want 1 and 1", got)
	}
}
