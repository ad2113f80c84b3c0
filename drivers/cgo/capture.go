package cgo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/wal"
)

// capture follows the WAL of one connection. A commit hook marks it dirty;
// the connection then reads the new frames at the first moment after the
// commit at which it regains control (the end of the statement, the
// preparation of the next one, or the start of its next method), which is
// always before anything can checkpoint and restart the log. The pages are
// copied out of the file then, so a later transaction cannot change them.
type capture struct {
	walPath         string
	checkpointBytes int64
	f               *os.File
	r               wal.Reader
	pos             wal.Position
	pending         []driver.CapturedCommit
	// dirty: a commit happened that has not been read yet.
	dirty bool
	// err is the last failure to read the WAL; the read is retried, and
	// TakeCommits reports the error until a read succeeds.
	err error
	// restartDue: the driver checkpointed the log; the next write starts
	// it afresh, so there is no point checkpointing again before that.
	restartDue bool
}

func newCapture(walPath string, checkpointBytes int64) *capture {
	return &capture{walPath: walPath, checkpointBytes: checkpointBytes}
}

// read appends the commits added to the WAL since the last read.
func (p *capture) read() {
	if p.f == nil {
		f, err := os.Open(p.walPath)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing was ever written to the log: the commit changed no
			// page (an empty transaction).
			p.dirty, p.err = false, nil
			return
		}
		if err != nil {
			p.err = fmt.Errorf("cgo: open WAL for page capture: %w", err)
			return
		}
		p.f = f
	}
	b, err := p.r.ReadCommits(p.f, p.pos)
	if err != nil {
		p.err = fmt.Errorf("cgo: page capture: %w", err)
		return
	}
	p.dirty, p.err = false, nil
	if b.Reset {
		p.restartDue = false
	}
	for _, c := range b.Commits {
		p.pending = append(p.pending, driver.CapturedCommit{PageSize: b.Header.PageSize, PageCount: c.DBSize, Pages: c.Pages})
	}
	p.pos = b.Next
}

// wantsCheckpoint: every commit is read and the WAL has grown past the
// threshold since the last checkpoint.
func (p *capture) wantsCheckpoint() bool {
	return !p.dirty && !p.restartDue && p.pos.Offset >= p.checkpointBytes
}

func (p *capture) close() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
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
	if err := c.checkpoint(driver.CheckpointTruncate); err == nil {
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
