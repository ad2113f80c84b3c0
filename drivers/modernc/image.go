package modernc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/cellb/cellb/core/atomicfile"
	"github.com/cellb/cellb/core/driver"

	sqlite3 "modernc.org/sqlite/lib"
)

// Serialize returns the database image: every page, 1..PageCount, exactly
// as a copy of the fully checkpointed file would hold it. It uses
// sqlite3_serialize, which copies each page from SQLite's pager (the file
// overlaid with the WAL's committed frames) and, unlike the backup API,
// rewrites no header field; so the image is exactly what the captured pages
// replay to. The file is not read behind SQLite's back, either: closing a
// second descriptor of it would drop SQLite's POSIX locks on it. Serialize
// must not be called inside a transaction.
func (c *Conn) Serialize(ctx context.Context) ([]byte, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	if c.InTransaction() {
		return nil, ErrInTransaction
	}
	defer c.asInternal(true)() // sqlite3_serialize prepares PRAGMA page_count
	out := c.tls.Alloc(8)
	defer c.tls.Free(8)
	p := sqlite3.Xsqlite3_serialize(c.tls, c.db, c.zMain, out, 0)
	c.rethrow()
	n := *(*int64)(cPointer(out))
	if p == 0 {
		if n <= 0 {
			return []byte{}, nil
		}
		return nil, fmt.Errorf("modernc: serialize: SQLite could not copy %d bytes", n)
	}
	defer sqlite3.Xsqlite3_free(c.tls, p)
	return bytes.Clone(cBytes(p, int(n))), nil
}

// Restore replaces the database with image (an empty image gives an empty
// database). A WAL-mode image (header bytes 18/19 = 2, as celld writes)
// works as is: file databases run in WAL mode anyway, and an in-memory
// database gets the image switched to rollback-journal mode. The image is
// checked before anything is touched (its header, then SQLite reading its
// schema from a private in-memory copy), and an invalid one fails with
// ErrInvalidImage, changing nothing. A file is replaced atomically (temp
// file, fsync, rename, fsync of the directory), and the connection is
// reopened with its settings and authorizer. Open Rows and Sessions stop
// working; page capture starts afresh from the restored image.
func (c *Conn) Restore(ctx context.Context, image []byte) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	if c.InTransaction() {
		return ErrInTransaction
	}
	if err := checkImage(image); err != nil {
		return err
	}
	loaded, err := c.loadImage(image)
	if err != nil {
		return err
	}
	if c.path == "" {
		return c.swapIn(loaded)
	}
	sqlite3.Xsqlite3_close_v2(c.tls, loaded)
	if err := c.closeDB(); err != nil {
		return fmt.Errorf("modernc: restore: close: %w", err)
	}
	writeErr := replaceFile(c.path, image)
	if err := c.openDB(); err != nil {
		return fmt.Errorf("modernc: restore: reopen: %w", err)
	}
	if writeErr != nil {
		return fmt.Errorf("modernc: restore (the database is unchanged): %w", writeErr)
	}
	return nil
}

// loadImage opens a new in-memory database holding image and makes SQLite
// read its schema, so an image that is not a usable database is refused
// before the current one is touched. The caller owns the handle.
func (c *Conn) loadImage(image []byte) (uintptr, error) {
	db, err := c.openHandle(":memory:")
	if err != nil {
		return 0, err
	}
	if len(image) == 0 {
		return db, nil
	}
	p := sqlite3.Xsqlite3_malloc64(c.tls, uint64(len(image)))
	if p == 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, db)
		return 0, fmt.Errorf("modernc: restore: cannot allocate %d bytes", len(image))
	}
	mem := cBytes(p, len(image))
	copy(mem, image)
	if mem[18] == 2 && mem[19] == 2 {
		mem[18], mem[19] = 1, 1 // an in-memory database cannot use a WAL
	}
	n := int64(len(image))
	// FREEONCLOSE: SQLite frees p, even when this call fails.
	rc := sqlite3.Xsqlite3_deserialize(c.tls, db, c.zMain, p, n, n,
		sqlite3.SQLITE_DESERIALIZE_FREEONCLOSE|sqlite3.SQLITE_DESERIALIZE_RESIZEABLE)
	if rc == sqlite3.SQLITE_OK {
		rc = c.readSchema(db)
	}
	if rc != sqlite3.SQLITE_OK {
		err := sqliteError(c.tls, db, rc)
		sqlite3.Xsqlite3_close_v2(c.tls, db)
		return 0, fmt.Errorf("%w: SQLite cannot read it: %w", ErrInvalidImage, err)
	}
	return db, nil
}

// readSchema makes SQLite parse db's schema, which reads page 1 and every
// schema page.
func (c *Conn) readSchema(db uintptr) int32 {
	zSQL, err := cStringAlloc(c.tls, "SELECT count(*) FROM sqlite_schema")
	if err != nil {
		return sqlite3.SQLITE_NOMEM
	}
	defer cFree(c.tls, zSQL)
	out := c.tls.Alloc(8)
	defer c.tls.Free(8)
	if rc := sqlite3.Xsqlite3_prepare_v2(c.tls, db, zSQL, -1, out, 0); rc != sqlite3.SQLITE_OK {
		return rc
	}
	st := cReadPtr(out)
	rc := sqlite3.Xsqlite3_step(c.tls, st)
	sqlite3.Xsqlite3_finalize(c.tls, st)
	if rc == sqlite3.SQLITE_ROW {
		return sqlite3.SQLITE_OK
	}
	return rc
}

// swapIn replaces an in-memory database by db, a loaded image.
func (c *Conn) swapIn(db uintptr) error {
	if err := c.closeDB(); err != nil {
		sqlite3.Xsqlite3_close_v2(c.tls, db)
		return fmt.Errorf("modernc: restore: close: %w", err)
	}
	c.setDB(db)
	if err := c.configure(); err != nil {
		c.closeDB()
		return fmt.Errorf("modernc: restore: %w", err)
	}
	return nil
}

// checkImage accepts an empty image or one that looks like a complete
// SQLite database file: the magic string, a valid page size, a length that
// is a whole number of pages, a known journal mode, and (when SQLite marked
// it valid) a page count matching the length.
func checkImage(img []byte) error {
	return checkHeader(img[:min(len(img), 100)], int64(len(img)))
}

// checkHeader is checkImage for an image of size bytes whose first bytes
// (up to 100) are h.
func checkHeader(h []byte, size int64) error {
	if size == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidImage}, args...)...)
	}
	const magic = "SQLite format 3\x00"
	if size < 100 || len(h) < 100 || string(h[:16]) != magic {
		return bad("no SQLite database header")
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return bad("page size %d", pageSize)
	}
	if size%pageSize != 0 {
		return bad("%d bytes is not a whole number of %d-byte pages", size, pageSize)
	}
	if w, r := h[18], h[19]; (w != 1 && w != 2) || (r != 1 && r != 2) {
		return bad("file format bytes %d/%d", w, r)
	}
	changeCounter := binary.BigEndian.Uint32(h[24:])
	inHeaderPages := binary.BigEndian.Uint32(h[28:])
	validFor := binary.BigEndian.Uint32(h[92:])
	if inHeaderPages != 0 && validFor == changeCounter && int64(inHeaderPages) != size/pageSize {
		return bad("the header says %d pages, the image holds %d", inHeaderPages, size/pageSize)
	}
	return nil
}

// replaceFile atomically makes path hold data (atomicfile.WriteFile; the
// new file keeps the old one's permissions). The WAL, shared-memory and
// rollback-journal files of the old database go first: left beside the new
// file, SQLite would replay them onto it. (Closing the connection has
// already checkpointed and removed the WAL.)
func replaceFile(path string, data []byte) error {
	if err := atomicfile.RemoveIfExist(path+"-wal", path+"-shm", path+"-journal"); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

// sqlDBPages reads every page of the main database through SQLite's pager
// (the sqlite_dbpage virtual table, which this build of SQLite has), in
// page order.
const sqlDBPages = `/*cellb*/ SELECT data FROM sqlite_dbpage('main') ORDER BY pgno`

// WriteImage writes Serialize's image to w a page at a time
// (driver.ImageWriter), never holding it whole: one statement over
// sqlite_dbpage reads each page through the pager, as sqlite3_serialize
// copies them (the file overlaid with the WAL's committed frames), inside
// the statement's one read transaction, so the pages are one commit's.
// Like Serialize it must not be called inside a transaction.
func (c *Conn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	if err := c.ready(ctx); err != nil {
		return 0, err
	}
	if c.InTransaction() {
		return 0, ErrInTransaction
	}
	r, err := c.query(ctx, stmtKey{sql: sqlDBPages, internal: true}, nil)
	if err != nil {
		return 0, fmt.Errorf("modernc: WriteImage: %w", err)
	}
	defer r.Close()
	var n int64
	for r.Next() {
		page, _ := r.Values()[0].([]byte)
		m, err := w.Write(page)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	if err := r.Err(); err != nil {
		return n, fmt.Errorf("modernc: WriteImage: %w", err)
	}
	return n, r.Close()
}

// RestoreWith is Restore of the image fill writes (driver.ImageRestorer).
// For a file database the image is written to a temporary file beside the
// database, synced, checked as Restore checks an image (its header, then
// SQLite reading its schema, here from the file opened read-only and
// immutable), and renamed into place, so it is never held in memory; a
// failed fill or check leaves the database as it was. An in-memory
// database has no file to rename into: the image is read back whole and
// restored.
func (c *Conn) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	if c.InTransaction() {
		return ErrInTransaction
	}
	dir := os.TempDir()
	if c.path != "" {
		dir = filepath.Dir(c.path)
	}
	tmp, err := atomicfile.Temp(dir, "."+filepath.Base(c.path)+".restore-*", func(f *os.File) error {
		if err := fill(f); err != nil {
			return err
		}
		return checkImageFile(f)
	})
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	if c.path == "" {
		img, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		return c.Restore(ctx, img)
	}
	if st, err := os.Stat(tmp); err != nil {
		return err
	} else if st.Size() > 0 {
		if err := c.checkDatabaseFile(tmp); err != nil {
			return err
		}
	}
	if err := c.closeDB(); err != nil {
		return fmt.Errorf("modernc: restore: close: %w", err)
	}
	var installErr error
	if st, err := os.Stat(c.path); err == nil {
		installErr = os.Chmod(tmp, st.Mode().Perm()) // the file keeps its permissions, as with Restore
	}
	if installErr == nil {
		installErr = atomicfile.RemoveIfExist(c.path+"-wal", c.path+"-shm", c.path+"-journal")
	}
	if installErr == nil {
		installErr = atomicfile.Commit(tmp, c.path)
	}
	if err := c.openDB(); err != nil {
		return fmt.Errorf("modernc: restore: reopen: %w", err)
	}
	if installErr != nil {
		return fmt.Errorf("modernc: restore (the database is unchanged): %w", installErr)
	}
	return nil
}

// checkImageFile is checkImage for the image in f.
func checkImageFile(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := make([]byte, min(st.Size(), 100))
	if _, err := f.ReadAt(h, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return checkHeader(h, st.Size())
}

// checkDatabaseFile makes SQLite read the schema of the database in path,
// opened read-only and immutable (nothing else uses it, and a WAL-mode
// file then needs no log or shared memory beside it).
func (c *Conn) checkDatabaseFile(path string) error {
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path), RawQuery: "mode=ro&immutable=1"}
	zName, err := cStringAlloc(c.tls, u.String())
	if err != nil {
		return err
	}
	defer cFree(c.tls, zName)
	pDB := c.tls.Alloc(8)
	defer c.tls.Free(8)
	flags := int32(sqlite3.SQLITE_OPEN_READONLY | sqlite3.SQLITE_OPEN_URI |
		sqlite3.SQLITE_OPEN_NOMUTEX | sqlite3.SQLITE_OPEN_EXRESCODE)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, zName, pDB, flags, 0)
	db := cReadPtr(pDB)
	if rc == sqlite3.SQLITE_OK {
		rc = c.readSchema(db)
	}
	if rc != sqlite3.SQLITE_OK {
		err := sqliteError(c.tls, db, rc)
		if db != 0 {
			sqlite3.Xsqlite3_close_v2(c.tls, db)
		}
		return fmt.Errorf("%w: SQLite cannot read it: %w", ErrInvalidImage, err)
	}
	sqlite3.Xsqlite3_close_v2(c.tls, db)
	return nil
}
