package modernc

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/wal"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

var walHookCallback = cFunc(walHookTrampoline)

// walCapture turns a capturing connection's WAL into commits.
//
// Automatic checkpoints are off, so every frame SQLite appends stays in the
// -wal file until the driver itself checkpoints, and a committed frame is
// never rewritten before then. SQLite's WAL hook runs right after each
// commit, and the hook reads the frames that commit appended. The pages are
// thus copied at commit time; the one commit the hook does not see (a
// write statement whose Rows were closed before the end commits on reset)
// is read as soon as those Rows close. Before any checkpoint the driver
// reads once more, so a checkpoint (after which SQLite restarts the log
// with new salts and overwrites it) never takes frames nobody has read.
type walCapture struct {
	path     string   // the -wal file
	file     *os.File // opened on first use; the WAL appears with the first write
	reader   wal.Reader
	pos      wal.Position
	pageSize int         // from the last WAL header read; 0 before the first
	header   *wal.Header // of the generation pos is in, once read
	mapping  walMapping
	pending  []driver.CapturedCommit
	// readAt is SQLite's data version of the main database when the WAL
	// was last read; while it is unchanged no commit can be unread.
	readAt uint32

	// err is sticky: once frames could not be read, commits are missing
	// and only Restore (or reopening) starts capture afresh.
	err      error
	errFresh bool // err not yet returned by the statement that caused it
}

// newWALCapture follows the WAL at path, copying pages into buffers from
// pages (a pool of the connection's own when nil).
func newWALCapture(path string, pages *driver.PagePool) *walCapture {
	if pages == nil {
		pages = new(driver.PagePool)
	}
	return &walCapture{path: path, reader: wal.Reader{Pages: pages}}
}

// start begins capture on a freshly opened database: checkpoint whatever
// WAL an earlier run left behind (its commits belong to the image the log
// starts from, not to this connection), then hook every commit.
func (w *walCapture) start(c *Conn) error {
	w.reset()
	// wal_autocheckpoint=0 removes SQLite's default WAL hook; ours goes in
	// after it, because setting the pragma later would remove ours.
	if err := c.execInternal(context.Background(), "PRAGMA wal_autocheckpoint=0"); err != nil {
		return err
	}
	if err := c.checkpointRaw(sqlite3.SQLITE_CHECKPOINT_TRUNCATE); err != nil {
		return fmt.Errorf("checkpoint before capture: %w", err)
	}
	sqlite3.Xsqlite3_wal_hook(c.tls, c.db, walHookCallback, c.handle)
	return nil
}

// reset forgets all state: pending commits, position, errors, the file.
func (w *walCapture) reset() {
	w.mapping.unmap()
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
	w.pos = wal.Position{}
	w.pageSize = 0
	w.header = nil
	w.pending = nil
	w.err, w.errFresh = nil, false
}

// read appends the commits found after the last position to pending.
// frames, when positive, is the number of frames SQLite says the log holds
// (the WAL hook's argument), which spares asking the file for its size.
func (w *walCapture) read(c *Conn, frames int) {
	if w.err != nil {
		return
	}
	w.readAt = c.dataVersion()
	if w.file == nil {
		f, err := os.Open(w.path)
		if errors.Is(err, os.ErrNotExist) {
			return // nothing was ever written
		}
		if err != nil {
			w.fail(err)
			return
		}
		w.file = f
	}
	src := w.source(frames)
	var b wal.Batch
	var err error
	if frames > 0 && w.header != nil && !w.pos.IsZero() {
		// Every commit of this generation has been read as it committed
		// (and before any checkpoint), so the generation's header can be
		// reused. The hook runs only after a commit: finding none means
		// the log was restarted, and the header must be read anew.
		b, err = w.reader.ReadCommitsFrom(src, w.pos, *w.header)
	}
	if err != nil || len(b.Commits) == 0 {
		b, err = w.reader.ReadCommits(src, w.pos)
	}
	if err != nil {
		w.fail(err)
		return
	}
	if b.Header.PageSize > 0 {
		w.pageSize = b.Header.PageSize
		w.header = &b.Header
	}
	for _, cm := range b.Commits {
		w.pending = append(w.pending, driver.CapturedCommit{
			PageSize:  b.Header.PageSize,
			PageCount: cm.DBSize,
			Pages:     cm.Pages,
			Pool:      w.reader.Pages,
		})
	}
	w.pos = b.Next
}

func (w *walCapture) fail(err error) {
	w.err = fmt.Errorf("%w (the commit itself succeeded; the durability log cannot follow this database any more): %w", ErrCaptureBroken, err)
	w.errFresh = true
	w.pending = nil
}

// freshError returns a capture failure once, to the call whose commit
// caused it; TakeCommits keeps returning it.
func (w *walCapture) freshError() error {
	if !w.errFresh {
		return nil
	}
	w.errFresh = false
	return w.err
}

// walSize is how far into the WAL the commits read so far reach.
func (w *walCapture) walSize() int64 { return w.pos.Offset }

// source is what the reader reads the WAL through. After a commit SQLite
// reports how many frames the log holds, which gives the file's size
// without asking the file system and lets those bytes be read through a
// memory mapping (walMapping).
func (w *walCapture) source(frames int) *walFile {
	src := &walFile{w: w, size: -1}
	if frames > 0 && w.pageSize > 0 {
		src.size = wal.HeaderSize + int64(frames)*(wal.FrameHeaderSize+int64(w.pageSize))
	}
	return src
}

// walFile is the WAL as the reader sees it (see walCapture.source).
type walFile struct {
	w    *walCapture
	size int64 // -1: unknown
}

func (f *walFile) Size() int64 { return f.size }

func (f *walFile) ReadAt(p []byte, off int64) (int, error) {
	if view := f.mapped(off, len(p)); view != nil {
		return copy(p, view), nil
	}
	return f.w.file.ReadAt(p, off)
}

// mapped returns bytes off..off+n of the file from the mapping, or nil when
// they are not known to be written (or the file is not mapped).
func (f *walFile) mapped(off int64, n int) []byte {
	if f.size < 0 || off < 0 || off+int64(n) > f.size {
		return nil
	}
	view := f.w.mapping.view(f.w.file, f.size)
	if view == nil {
		return nil
	}
	return view[off : off+int64(n)]
}

// dataVersion is SQLite's counter of the main database's write
// transactions (SQLITE_FCNTL_DATA_VERSION, which unlike PRAGMA
// data_version counts this connection's own), read without I/O.
func (c *Conn) dataVersion() uint32 {
	p := c.tls.Alloc(8)
	defer c.tls.Free(8)
	*(*uint32)(cPointer(p)) = 0
	sqlite3.Xsqlite3_file_control(c.tls, c.db, c.zMain, sqlite3.SQLITE_FCNTL_DATA_VERSION, p)
	return *(*uint32)(cPointer(p))
}

// walHookTrampoline is SQLite's WAL hook: called after every commit in WAL
// mode, with the name of the database that committed.
func walHookTrampoline(_ *libc.TLS, handle uintptr, _ uintptr, zDB uintptr, frames int32) int32 {
	c := lookupConn(handle)
	if c == nil || c.wal == nil || !cStringIs(zDB, "main") {
		return sqlite3.SQLITE_OK
	}
	c.wal.read(c, int(frames))
	return sqlite3.SQLITE_OK
}

// TakeCommits returns every commit made since the previous call, in order,
// with the pages each changed as they were at commit time (see
// driver.PageCapturer). Once the WAL is past Options.CheckpointBytes and no
// transaction or Rows is open, it then checkpoints the WAL, so that SQLite
// starts the log over from the beginning of the file.
func (c *CapturingConn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	w := c.wal
	if c.dataVersion() != w.readAt {
		w.read(c.Conn, 0) // a commit SQLite's WAL hook did not report
	}
	if w.err != nil {
		w.errFresh = false
		return nil, w.err
	}
	out := w.pending
	w.pending = nil
	if w.walSize() >= c.opts.CheckpointBytes && !c.InTransaction() && len(c.rows) == 0 {
		// RESTART, not TRUNCATE: SQLite then writes the next commits over
		// the old frames from the start of the file (with new salts), and
		// overwriting blocks the file already has costs far less than
		// growing it again after a truncation (see
		// docs/benchmarks-drivers-modernc.md).
		if err := c.checkpoint(sqlite3.SQLITE_CHECKPOINT_RESTART); err != nil {
			// Not fatal: the WAL keeps growing and the next call retries.
			c.opts.Logger.WarnContext(ctx, "modernc: checkpoint after capture failed", "path", c.path, "err", err)
		}
	}
	return out, nil
}
