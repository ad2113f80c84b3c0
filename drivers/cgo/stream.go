//go:build cgo

package cgo

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct sqlite3 sqlite3;
int sqlite3_file_control(sqlite3 *db, const char *zDbName, int op, void *pArg);

// The head of SQLite's sqlite3_io_methods and sqlite3_file, as far as
// xRead (the project carries no SQLite header; this layout is SQLite's
// stable VFS interface).
typedef struct cellb_file cellb_file;
typedef struct {
	int iVersion;
	int (*xClose)(cellb_file *);
	int (*xRead)(cellb_file *, void *, int iAmt, long long iOfst);
} cellb_io_methods;
struct cellb_file {
	const cellb_io_methods *pMethods;
};

// cellb_read_main reads n bytes at off of the main database's file through
// SQLite's own open file (SQLITE_FCNTL_FILE_POINTER, 7): no second
// descriptor, whose closing would drop SQLite's POSIX locks. -1: the
// database has no file.
static int cellb_read_main(sqlite3 *db, void *buf, int n, long long off) {
	cellb_file *f = 0;
	int rc = sqlite3_file_control(db, "main", 7, &f);
	if (rc != 0) return rc;
	if (f == 0 || f->pMethods == 0) return -1;
	return f->pMethods->xRead(f, buf, n, off);
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/cellb/cellb/core/atomicfile"
	"github.com/cellb/cellb/core/driver"
)

// imageChunk is how much of the file WriteImage reads at a time.
const imageChunk = 1 << 20

// WriteImage writes Serialize's image to w a megabyte at a time
// (driver.ImageWriter): after a TRUNCATE checkpoint the file is the whole
// database, and it is read through SQLite's own file handle. An in-memory
// database has no file: ErrUnsupported, having written nothing (the caller
// uses Serialize).
func (c *conn) WriteImage(ctx context.Context, w io.Writer) (int64, error) {
	if err := c.ready(ctx); err != nil {
		return 0, err
	}
	if c.s.path == "" {
		return 0, driver.ErrUnsupported
	}
	if c.InTransaction() {
		return 0, fmt.Errorf("cgo: WriteImage: %w", ErrInTransaction)
	}
	if err := c.Checkpoint(ctx, driver.CheckpointTruncate); err != nil {
		return 0, fmt.Errorf("cgo: WriteImage: %w", err)
	}
	ps, err := c.internalInt("PRAGMA page_size")
	if err != nil {
		return 0, err
	}
	pages, err := c.internalInt("PRAGMA page_count")
	if err != nil {
		return 0, err
	}
	size := ps * pages
	buf := C.malloc(C.size_t(min(max(size, 1), imageChunk)))
	defer C.free(buf)
	var written int64
	for written < size {
		if err := ctx.Err(); err != nil {
			return written, err
		}
		n := min(imageChunk, size-written)
		if rc := C.cellb_read_main(rawDB(c.sc), buf, C.int(n), C.longlong(written)); rc == -1 && written == 0 {
			return 0, driver.ErrUnsupported
		} else if rc != 0 {
			return written, &sqliteError{Code: int(rc) & 0xff, ExtendedCode: int(rc), Msg: "cgo: WriteImage: reading the database file failed"}
		}
		m, err := w.Write(unsafe.Slice((*byte)(buf), n))
		written += int64(m)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// RestoreWith is Restore of the image fill writes (driver.ImageRestorer).
// For a file database the image is written to a temporary file beside the
// database, synced, checked as Restore checks an image (its header), set to
// WAL mode (bytes 18/19) and renamed into place, so it is never held in
// memory; a failed fill or check leaves the database as it was. An
// in-memory database has no file to rename into: the image is read back
// whole and restored.
func (c *conn) RestoreWith(ctx context.Context, fill func(w driver.ImageFile) error) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	if c.InTransaction() {
		return fmt.Errorf("cgo: restore: %w", ErrInTransaction)
	}
	dir := os.TempDir()
	if c.s.path != "" {
		dir = filepath.Dir(c.s.path)
	}
	tmp, err := atomicfile.Temp(dir, "."+filepath.Base(c.s.path)+".restore-*", func(f *os.File) error {
		if err := fill(f); err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			return err
		}
		h := make([]byte, min(st.Size(), 100))
		if _, err := f.ReadAt(h, 0); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err := checkHeader(h, st.Size()); err != nil {
			return err
		}
		if c.s.path != "" && st.Size() > 0 && h[18] == 1 {
			_, err = f.WriteAt([]byte{2, 2}, 18) // the file stays in WAL mode
		}
		return err
	})
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	if c.s.path == "" {
		img, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		return c.Restore(ctx, img)
	}
	return c.replaceWith(tmp)
}
