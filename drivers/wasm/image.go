package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/cellb/cellb/core/atomicfile"

	"github.com/ncruces/go-sqlite3"

	"github.com/cellb/cellb/core/driver"
)

// Serialize returns the database image: pages 1..PageCount exactly as the
// file holds them. In rollback-journal mode the file is the whole database
// between transactions; in WAL mode it is once the log has been
// checkpointed. So the image is read straight from the file (under a
// shared lock), with no header byte rewritten as a backup copy would.
func (c *Conn) Serialize(ctx context.Context) ([]byte, error) {
	var img []byte
	err := c.readImage(ctx, "Serialize", func(pageSize, pages int64) error {
		img = make([]byte, pageSize*pages)
		return readAt(c.file.File, img, 0)
	})
	if err != nil {
		return nil, err
	}
	return img, nil
}

// imageChunk is how much of the file WriteImage reads at a time.
const imageChunk = 1 << 20

// WriteImage writes Serialize's image to w (driver.ImageWriter), reading
// the file a megabyte at a time under the same shared lock, so the image
// is never held whole.
func (c *Conn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	var written int64
	err := c.readImage(ctx, "WriteImage", func(pageSize, pages int64) error {
		size := pageSize * pages
		buf := make([]byte, min(size, imageChunk))
		for written < size {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(int64(len(buf)), size-written)
			if err := readAt(c.file.File, buf[:n], written); err != nil {
				return err
			}
			m, err := w.Write(buf[:n])
			written += int64(m)
			if err != nil {
				return errWriter{err}
			}
		}
		return nil
	})
	return written, err
}

// errWriter marks a failure of WriteImage's writer, which is reported as
// it is, not as a failure to read the database.
type errWriter struct{ err error }

func (e errWriter) Error() string { return e.err.Error() }
func (e errWriter) Unwrap() error { return e.err }

// readImage runs read inside a read transaction (whose first read takes
// the shared lock), after a WAL checkpoint, with the page size and count.
func (c *Conn) readImage(ctx context.Context, op string, read func(pageSize, pages int64) error) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.InTransaction() {
		return fmt.Errorf("%s: %w", op, ErrInTransaction)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.walMode() {
		// The image is the file once the log has been copied into it.
		if err := c.checkpoint(ctx, "TRUNCATE"); err != nil {
			return err
		}
	}
	defer c.bind(ctx)()
	c.auth.mode = authInternal
	defer func() { c.auth.mode = authUser }()

	if err := c.db.Exec("BEGIN DEFERRED"); err != nil {
		return sqliteError(ctx, err)
	}
	err := c.readPages(ctx, read)
	if cerr := c.db.Exec("COMMIT"); err == nil && cerr != nil {
		err = sqliteError(ctx, cerr)
	}
	return err
}

// readPages reads the page size and count inside the caller's read
// transaction and hands them to read.
func (c *Conn) readPages(ctx context.Context, read func(pageSize, pages int64) error) error {
	ps, err := queryText(ctx, c.db, "PRAGMA page_size")
	if err != nil {
		return err
	}
	var pageSize, pages int64
	if _, err := fmt.Sscan(ps, &pageSize); err != nil {
		return fmt.Errorf("drivers/wasm: page_size %q: %w", ps, err)
	}
	pc, err := queryText(ctx, c.db, "PRAGMA page_count")
	if err != nil {
		return err
	}
	if _, err := fmt.Sscan(pc, &pages); err != nil {
		return fmt.Errorf("drivers/wasm: page_count %q: %w", pc, err)
	}
	if err := read(pageSize, pages); err != nil {
		var we errWriter
		if errors.As(err, &we) {
			return we.err
		}
		return fmt.Errorf("drivers/wasm: reading %s: %w", c.describe(), err)
	}
	return nil
}

// Restore replaces the database with image (a whole number of pages, or
// empty for an empty database). An image from a WAL-mode database is
// switched to rollback-journal mode first. The image is checked before
// anything is replaced: a bad image returns an error wrapping ErrBadImage
// and leaves the database as it was. After Restore, page capture starts
// from the restored image.
func (c *Conn) Restore(ctx context.Context, image []byte) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.InTransaction() {
		return fmt.Errorf("Restore: %w", ErrInTransaction)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	img, err := prepareImage(image, c.walMode())
	if err != nil {
		return err
	}
	if c.mem {
		return c.restoreMemory(ctx, img)
	}
	return c.restoreFile(ctx, img)
}

// RestoreWith is Restore of the image fill writes (driver.ImageRestorer).
// For a file database the image is written to a temporary file beside the
// database, checked and renamed into place as Restore does with its
// bytes; an in-memory database reads the file back and restores that.
func (c *Conn) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.InTransaction() {
		return fmt.Errorf("RestoreWith: %w", ErrInTransaction)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := os.TempDir()
	if !c.mem {
		dir = filepath.Dir(c.path)
	}
	f, err := os.CreateTemp(dir, filepath.Base(c.path)+".restore-*")
	if err != nil {
		return fmt.Errorf("drivers/wasm: RestoreWith: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	err = fill(f)
	if err == nil {
		err = prepareImageFile(f, c.walMode())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if c.mem {
		img, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		return c.restoreMemory(ctx, img)
	}
	return c.installFile(ctx, tmp, true)
}

// prepareImageFile is prepareImage for an image in f: the same checks on
// its header and size, the same cut to the header's page count and the
// same journal-mode bytes, written in place.
func prepareImageFile(f *os.File, wal bool) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return nil
	}
	hb := make([]byte, headerSize)
	if _, err := f.ReadAt(hb, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	h, err := parseHeader(hb[:min(int64(len(hb)), fi.Size())])
	if err != nil {
		return err
	}
	if fi.Size()%int64(h.pageSize) != 0 {
		return fmt.Errorf("%w: %d bytes is not a whole number of %d-byte pages", ErrBadImage, fi.Size(), h.pageSize)
	}
	if n := fi.Size() / int64(h.pageSize); h.inHeaderPages != 0 && int64(h.inHeaderPages) > n {
		return fmt.Errorf("%w: the header counts %d pages but the image holds %d", ErrBadImage, h.inHeaderPages, n)
	}
	for _, b := range []byte{hb[offWriteVersion], hb[offReadVersion]} {
		if b != journalModeRollback && b != journalModeWAL {
			return fmt.Errorf("%w: unsupported file format version %d", ErrBadImage, b)
		}
	}
	if h.inHeaderPages != 0 {
		if err := f.Truncate(int64(h.inHeaderPages) * int64(h.pageSize)); err != nil {
			return err
		}
	}
	mode := byte(journalModeRollback)
	if wal {
		mode = journalModeWAL
	}
	_, err = f.WriteAt([]byte{mode, mode}, offWriteVersion)
	return err
}

// prepareImage checks image and returns the bytes to install: a copy (the
// caller keeps its slice), cut to the header's page count, with header
// bytes 18/19 saying the connection's journal mode. Setting them here,
// rather than letting SQLite switch modes after opening, keeps every other
// byte of the image as it was (a switch is a write that bumps the change
// counter).
func prepareImage(image []byte, wal bool) ([]byte, error) {
	if len(image) == 0 {
		return nil, nil
	}
	h, err := checkImage(image)
	if err != nil {
		return nil, err
	}
	n := len(image)
	if h.inHeaderPages != 0 {
		n = int(h.inHeaderPages) * h.pageSize
	}
	img := make([]byte, n)
	copy(img, image)
	mode := byte(journalModeRollback)
	if wal {
		mode = journalModeWAL
	}
	img[offWriteVersion], img[offReadVersion] = mode, mode
	return img, nil
}

func (c *Conn) restoreMemory(ctx context.Context, img []byte) error {
	// The new database opens before the old one closes, so a failure
	// leaves the old one in place.
	db, f, err := c.openDB(ctx, img)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadImage, err)
	}
	if err := c.closeDB(false); err != nil {
		db.Close()
		return err
	}
	c.install(db, f)
	return nil
}

func (c *Conn) restoreFile(ctx context.Context, img []byte) error {
	dir := filepath.Dir(c.path)
	tmp, err := writeTemp(dir, filepath.Base(c.path)+".restore-*", img)
	if err != nil {
		return fmt.Errorf("drivers/wasm: Restore %s: %w", c.path, err)
	}
	defer os.Remove(tmp) // a no-op once renamed
	return c.installFile(ctx, tmp, img != nil)
}

// installFile checks the database in tmp (unless it is empty) and puts it
// in place of the connection's file.
func (c *Conn) installFile(ctx context.Context, tmp string, nonEmpty bool) error {
	if nonEmpty {
		if err := checkDatabaseFile(ctx, tmp); err != nil {
			return fmt.Errorf("%w: %w", ErrBadImage, err)
		}
	}

	// From here on the old database is gone; a failure leaves the
	// connection broken rather than half-restored.
	if err := c.closeDB(false); err != nil {
		return err
	}
	err := replaceFile(tmp, c.path)
	if err == nil {
		err = c.open(ctx)
	}
	if err != nil {
		c.broken = fmt.Errorf("drivers/wasm: Restore %s failed, the connection is unusable: %w", c.path, err)
		return c.broken
	}
	return nil
}

// writeTemp writes data to a new file in dir and syncs it.
func writeTemp(dir, pattern string, data []byte) (string, error) {
	return atomicfile.Temp(dir, pattern, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// checkDatabaseFile opens path read-only and reads its schema. The file is
// opened as immutable: nothing else uses it, and a WAL-mode file then
// needs no log or shared memory.
func checkDatabaseFile(ctx context.Context, path string) error {
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(path), RawQuery: "mode=ro&immutable=1"}
	db, err := sqlite3.OpenFlags(u.String(), sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return sqliteError(ctx, err)
	}
	defer db.Close()
	_, err = queryText(ctx, db, "SELECT count(*) FROM sqlite_schema")
	return err
}

// replaceFile puts tmp in place of path. The old database's journal files
// go first: a journal left next to the new file could be taken for a hot
// journal and "roll back" the new content with old pages.
func replaceFile(tmp, path string) error {
	if err := atomicfile.RemoveIfExist(path+"-journal", path+"-wal", path+"-shm"); err != nil {
		return err
	}
	return atomicfile.Commit(tmp, path)
}
