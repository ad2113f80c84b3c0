//go:build cgo

package cgo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/wal"
)

// capture follows the WAL of one connection. SQLite's commit and WAL hooks
// record each commit (the WAL hook also sees VACUUM, which bypasses the
// commit hook), and the driver reads the new frames as soon as it regains
// control: when the statement returns, or earlier, when SQLite prepares the
// next statement of the same Exec (the authorizer callback). That is always
// before SQLite can restart the log over unread frames. A restart happens
// only when a write begins after a completed checkpoint, and automatic
// checkpoints are off; the driver's own checkpoints read first; a
// checkpoint statement followed by more statements in the same Exec is
// prepared afresh (mattn caches only the last statement of a text), so the
// authorizer reads before it runs; and one that ends an Exec is followed by
// the read when the Exec returns. The pages are copied out of the file at
// that point, so a later transaction cannot change them.
type capture struct {
	walPath         string
	checkpointBytes int64
	f               *os.File
	r               wal.Reader
	pos             wal.Position
	pending         []driver.CapturedCommit
	// flag is set by SQLite's hooks: a commit happened that has not been
	// read yet. It stays set while reading fails.
	flag commitFlag
	// err is the last failure to read the WAL; the read is retried, and
	// TakeCommits reports the error until a read succeeds.
	err error
	// restartDue: the driver checkpointed the log; the next write starts
	// it afresh, so there is no point checkpointing again before that.
	restartDue bool
	// hdr is the WAL header of the generation pos belongs to (zero before
	// the first read).
	hdr wal.Header
}

func newCapture(walPath string, checkpointBytes int64, pages *driver.PagePool) *capture {
	return &capture{walPath: walPath, checkpointBytes: checkpointBytes, flag: newCommitFlag(), r: wal.Reader{Pages: pages}}
}

// read appends the commits added to the WAL since the last read. When the
// WAL hook reported how many frames the WAL holds, reading stops at their
// end without asking the file system.
func (p *capture) read() {
	if p.f == nil {
		f, err := os.Open(p.walPath)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing was ever written to the log: the commit changed no
			// page (an empty transaction).
			p.flag.clear()
			p.err = nil
			return
		}
		if err != nil {
			p.err = fmt.Errorf("cgo: open WAL for page capture: %w", err)
			return
		}
		p.f = f
	}
	var src io.ReaderAt = p.f
	if frames := p.flag.frames(); frames > 0 && p.hdr.PageSize > 0 {
		src = io.NewSectionReader(p.f, 0, wal.HeaderSize+frames*p.hdr.FrameSize())
	}
	// Every commit is read before the log can be checkpointed (see the
	// type's comment), so the current generation can be continued without
	// reading the header; finding no commit that way may mean a restart,
	// which the full read then sees.
	var b wal.Batch
	var err error
	if p.hdr.PageSize > 0 && !p.pos.IsZero() {
		b, err = p.r.ReadCommitsFrom(src, p.pos, p.hdr)
	}
	if err != nil || len(b.Commits) == 0 {
		b, err = p.r.ReadCommits(src, p.pos)
	}
	if err != nil {
		p.err = fmt.Errorf("cgo: page capture: %w", err)
		return
	}
	p.flag.clear()
	p.err = nil
	if b.Reset {
		p.restartDue = false
	}
	if b.Header.PageSize > 0 {
		p.hdr = b.Header
	}
	for _, c := range b.Commits {
		p.pending = append(p.pending, driver.CapturedCommit{PageSize: b.Header.PageSize, PageCount: c.DBSize, Pages: c.Pages, Pool: p.r.Pages})
	}
	p.pos = b.Next
}

// wantsCheckpoint: every commit is read and the WAL has grown past the
// threshold since the last checkpoint.
func (p *capture) wantsCheckpoint() bool {
	return !p.dirty() && !p.restartDue && p.pos.Offset >= p.checkpointBytes
}

// dirty reports a commit that has not been read yet.
func (p *capture) dirty() bool { return p.flag.isSet() }

// close releases the capture's file and flag; the SQLite connection that
// set the flag must be closed first.
func (p *capture) close() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	if p.flag.p != nil {
		p.flag.free()
		p.flag = commitFlag{}
	}
}

// maybeCheckpoint checkpoints a WAL that has grown past the threshold once
// its commits are read. SQLite restarts the log at the next write, and the
// reader notices by the new salts.
func (c *conn) maybeCheckpoint() {
	if !c.cap.wantsCheckpoint() || c.InTransaction() {
		return
	}
	p := c.cap
	if err := c.checkpoint(driver.CheckpointRestart); err == nil {
		p.restartDue = true
	}
}

// captureConn is a connection opened with page capture.
type captureConn struct{ *conn }

var _ driver.PageCapturer = captureConn{}

// TakeCommits returns the commits made since the previous call, oldest
// first. If the WAL could not be read, it returns the error and keeps the
// commits for a later call.
func (c captureConn) TakeCommits(ctx context.Context) ([]driver.CapturedCommit, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	if c.cap.err != nil {
		return nil, c.cap.err
	}
	out := c.cap.pending
	c.cap.pending = nil
	return out, nil
}
