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
	path    string   // the -wal file
	file    *os.File // opened on first use; the WAL appears with the first write
	reader  wal.Reader
	pos     wal.Position
	pending []driver.CapturedCommit

	// err is sticky: once frames could not be read, commits are missing
	// and only Restore (or reopening) starts capture afresh.
	err      error
	errFresh bool // err not yet returned by the statement that caused it
}

func newWALCapture(path string) *walCapture { return &walCapture{path: path} }

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
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
	w.pos = wal.Position{}
	w.pending = nil
	w.err, w.errFresh = nil, false
}

// read appends the commits found after the last position to pending.
func (w *walCapture) read() {
	if w.err != nil {
		return
	}
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
	b, err := w.reader.ReadCommits(w.file, w.pos)
	if err != nil {
		w.fail(err)
		return
	}
	for _, cm := range b.Commits {
		w.pending = append(w.pending, driver.CapturedCommit{
			PageSize:  b.Header.PageSize,
			PageCount: cm.DBSize,
			Pages:     cm.Pages,
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

// walHookTrampoline is SQLite's WAL hook: called after every commit in WAL
// mode, with the name of the database that committed.
func walHookTrampoline(_ *libc.TLS, handle uintptr, _ uintptr, zDB uintptr, _ int32) int32 {
	c := lookupConn(handle)
	if c == nil || c.wal == nil || goString(zDB) != "main" {
		return sqlite3.SQLITE_OK
	}
	c.wal.read()
	return sqlite3.SQLITE_OK
}

// TakeCommits returns every commit made since the previous call, in order,
// with the pages each changed as they were at commit time (see
// driver.PageCapturer). Once the WAL is past Options.CheckpointBytes and no
// transaction or Rows is open, it then checkpoints the WAL back to empty.
func (c *CapturingConn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	w := c.wal
	w.read()
	if w.err != nil {
		w.errFresh = false
		return nil, w.err
	}
	out := w.pending
	w.pending = nil
	if w.walSize() >= c.opts.CheckpointBytes && !c.InTransaction() && len(c.rows) == 0 {
		if err := c.checkpoint(sqlite3.SQLITE_CHECKPOINT_TRUNCATE); err != nil {
			// Not fatal: the WAL keeps growing and the next call retries.
			c.opts.Logger.WarnContext(ctx, "modernc: checkpoint after capture failed", "path", c.path, "err", err)
		}
	}
	return out, nil
}
