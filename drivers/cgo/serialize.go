//go:build cgo

package cgo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cellb/cellb/core/atomicfile"

	"github.com/mattn/go-sqlite3"
)

// Serialize returns every page of the database, 1 to page_count, as SQLite's
// pager holds it: committed WAL frames included, nothing rewritten. That is
// what the file would hold after a full checkpoint.
func (c *conn) Serialize(ctx context.Context) ([]byte, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	if c.InTransaction() {
		return nil, fmt.Errorf("cgo: serialize: %w", ErrInTransaction)
	}
	n, err := c.internalInt("PRAGMA page_count")
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []byte{}, nil
	}
	// sqlite3_serialize prepares its own PRAGMA, which the user's
	// authorizer must not see.
	c.internal = true
	img, err := c.sc.Serialize("main")
	c.internal = false
	if err != nil {
		return nil, fmt.Errorf("cgo: serialize: %w", wrapErr(err))
	}
	return img, nil
}

// Restore replaces the database with image. A file database is replaced
// atomically: the image goes to a temporary file beside it, which is synced
// and renamed over the database after the old WAL, shared-memory and
// journal files are removed; the connection is then reopened with its
// settings and authorizer. The file stays in WAL mode, so an image from a
// rollback-journal database has its format bytes (18/19) set to 2. Page
// capture starts afresh: commits not yet taken are dropped.
func (c *conn) Restore(ctx context.Context, image []byte) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	if err := checkImage(image); err != nil {
		return err
	}
	if c.InTransaction() {
		return fmt.Errorf("cgo: restore: %w", ErrInTransaction)
	}
	if c.s.path == "" {
		return c.restoreMemory(image)
	}
	img := image
	if len(img) > 0 && img[18] == 1 {
		img = append([]byte(nil), image...)
		img[18], img[19] = 2, 2
	}
	dir := filepath.Dir(c.s.path)
	tmp, err := writeTemp(dir, filepath.Base(c.s.path)+".restore-*", img)
	if err != nil {
		return fmt.Errorf("cgo: restore: %w", err)
	}
	defer os.Remove(tmp) // a no-op once renamed

	return c.replaceWith(tmp)
}

// replaceWith closes the connection, puts the synced file tmp in place of
// the database and reopens. Closing the last connection checkpoints and
// removes the WAL; the database file is replaced next anyway.
func (c *conn) replaceWith(tmp string) error {
	c.closeSQLite()
	replaceErr := replaceDatabase(c.s.path, tmp)
	if err := c.open(); err != nil {
		return errors.Join(replaceErr, fmt.Errorf("cgo: restore: reopen: %w", err))
	}
	if replaceErr != nil {
		return fmt.Errorf("cgo: restore: %w", replaceErr)
	}
	return nil
}

// writeTemp writes b to a new file in dir and syncs it.
func writeTemp(dir, pattern string, b []byte) (string, error) {
	return atomicfile.Temp(dir, pattern, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// replaceDatabase renames tmp over path. The old database's WAL, shared
// memory and journal go first: left behind, SQLite would apply them to the
// new file.
func replaceDatabase(path, tmp string) error {
	if err := atomicfile.RemoveIfExist(path+"-wal", path+"-shm", path+"-journal"); err != nil {
		return err
	}
	return atomicfile.Commit(tmp, path)
}

// restoreMemory replaces an in-memory database. mattn's Deserialize makes
// a database that cannot grow, so the image is deserialized into a scratch
// connection and copied into a fresh in-memory database with SQLite's
// backup. The backup rewrites the header's change counter and size fields,
// and an in-memory database cannot be in WAL mode (bytes 18/19 become 1).
func (c *conn) restoreMemory(image []byte) error {
	img := append([]byte(nil), image...)
	if len(img) > 0 {
		img[18], img[19] = 1, 1
	}
	old, oldTx := c.sc, c.txStmts
	c.sc, c.txStmts = nil, nil
	err := c.open()
	if err == nil && len(img) > 0 {
		if err = copyInto(c.sc, img); err != nil {
			c.closeSQLite()
		}
	}
	if err != nil {
		c.sc, c.txStmts = old, oldTx
		return fmt.Errorf("cgo: restore: %w", err)
	}
	fresh, freshTx := c.sc, c.txStmts
	c.sc, c.txStmts = old, oldTx
	c.closeSQLite()
	c.sc, c.txStmts = fresh, freshTx
	return nil
}

func copyInto(dst *sqlite3.SQLiteConn, img []byte) error {
	raw, err := (&sqlite3.SQLiteDriver{}).Open("file::memory:")
	if err != nil {
		return wrapErr(err)
	}
	src := raw.(*sqlite3.SQLiteConn)
	defer src.Close()
	if err := src.Deserialize(img, "main"); err != nil {
		return wrapErr(err)
	}
	b, err := dst.Backup("main", src, "main")
	if err != nil {
		return wrapErr(err)
	}
	if _, err := b.Step(-1); err != nil {
		b.Finish()
		return wrapErr(err)
	}
	return wrapErr(b.Finish())
}
