//go:build cgo

package cgo_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/drivers/cgo"
)

// WriteImage streams Serialize's bytes with commits still in the WAL and
// under an authorizer that denies everything, and page capture goes on as
// if it had not run (its checkpoint reads the WAL first). An in-memory
// database answers ErrUnsupported, having written nothing.
func TestWriteImageIsSerialize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	c := open(t, &cgo.Driver{}, path, true)
	exec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, v)")
	tr := track(t, c)
	iw, ok := c.(driver.ImageWriter)
	if !ok {
		t.Fatal("the connection is no driver.ImageWriter")
	}
	for i := range 5 {
		exec(t, c, "INSERT INTO t(v) VALUES (randomblob(300000))")
		exec(t, c, "UPDATE t SET v = randomblob(100) WHERE k = 1")
		if err := c.SetAuthorizer(func(driver.Action, string, string, string, string) driver.AuthResult { return driver.AuthDeny }); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := iw.WriteImage(t.Context(), &buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetAuthorizer(nil); err != nil {
			t.Fatal(err)
		}
		img := serialize(t, c)
		if !bytes.Equal(buf.Bytes(), img) || n != int64(len(img)) {
			t.Fatalf("round %d: WriteImage wrote %d bytes (said %d), Serialize %d; equal %v", i, buf.Len(), n, len(img), bytes.Equal(buf.Bytes(), img))
		}
		if got := tr.check("after WriteImage"); got != 2 {
			t.Fatalf("round %d: %d commits captured, want 2", i, got)
		}
	}
	mem := open(t, &cgo.Driver{}, "", false)
	exec(t, mem, "CREATE TABLE t(x)")
	var buf bytes.Buffer
	if n, err := mem.(driver.ImageWriter).WriteImage(t.Context(), &buf); !errors.Is(err, driver.ErrUnsupported) || n != 0 || buf.Len() != 0 {
		t.Fatalf("in-memory WriteImage: %d bytes, %v; want ErrUnsupported and nothing", n, err)
	}
}

// RestoreWith checks the file's header as Restore checks an image's: a bad
// one is refused with ErrInvalidImage and the database is left as it was;
// a rollback-journal image is installed in WAL mode and takes writes.
func TestRestoreWithChecksAndInstalls(t *testing.T) {
	src := open(t, &cgo.Driver{}, filepath.Join(t.TempDir(), "src"), false)
	exec(t, src, "CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(9000))")
	good := serialize(t, src)
	good[18], good[19] = 1, 1
	c := open(t, &cgo.Driver{}, filepath.Join(t.TempDir(), "db"), true)
	exec(t, c, "CREATE TABLE keep(x); INSERT INTO keep VALUES (1)")
	before := serialize(t, c)
	ir := c.(driver.ImageRestorer)
	fillWith := func(b []byte) func(driver.ImageFile) error {
		return func(w driver.ImageFile) error { _, err := w.WriteAt(b, 0); return err }
	}
	if err := ir.RestoreWith(t.Context(), fillWith([]byte("not a database, not at all, and long enough to have a header of a hundred bytes or more, surely"))); !errors.Is(err, cgo.ErrInvalidImage) {
		t.Fatalf("RestoreWith of garbage: %v", err)
	}
	if !bytes.Equal(serialize(t, c), before) {
		t.Fatal("a refused RestoreWith changed the database")
	}
	if err := ir.RestoreWith(t.Context(), fillWith(good)); err != nil {
		t.Fatal(err)
	}
	exec(t, c, "INSERT INTO t VALUES (2)")
	if rows := queryRows(t, c, "SELECT count(*) FROM t"); rows[0][0] != int64(2) {
		t.Fatalf("restored table holds %v rows", rows[0][0])
	}
	if img := serialize(t, c); img[18] != 2 || img[19] != 2 {
		t.Fatalf("format bytes %d/%d after RestoreWith, want 2/2 (WAL)", img[18], img[19])
	}
}
