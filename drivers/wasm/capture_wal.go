package wasm

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3/vfs"
)

// Layout of SQLite's write-ahead log: a 32-byte header, then frames of a
// 24-byte header and one page.
const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
	offWALPageSize     = 8 // in the log header
	offFramePgno       = 0 // in a frame header
	offFrameCommit     = 4 // database size after the commit; 0 if not a commit frame
)

// walState follows the log of a WAL-mode database.
//
// SQLite appends a transaction's pages to the log as frames, starting right
// after the last committed frame; the transaction's last frame carries the
// database size and marks the commit. A transaction that rolls back leaves
// frames without that mark, which the next transaction overwrites from the
// same offset. Within a transaction SQLite may rewrite one of its own
// frames in place, and after the commit frame it rewrites frame headers to
// fix checksums. So the recorder waits for the commit frame to be fully
// written and then reads the transaction's frames back from the log: at
// that moment they hold exactly what was committed.
type walState struct {
	pageSize int64 // from the log header; 0 until known
	base     int64 // offset of the first frame after the last commit; -1 until known
	commitAt int64 // offset of the commit frame being written; -1 if none
}

func (w *walState) reset() { *w = walState{base: -1, commitAt: -1} }

// walWrote follows one write to the log (already applied to f).
func (r *recorder) walWrote(f vfs.File, p []byte, off int64) {
	w := &r.log
	if r.err != nil {
		return
	}
	if off == 0 {
		// A new log, or the log restarted after a checkpoint: frames
		// begin again after the header.
		if len(p) < walHeaderSize {
			r.fail(fmt.Errorf("a %d-byte write to the log header", len(p)))
			return
		}
		w.pageSize = walPageSize(p)
		w.base, w.commitAt = walHeaderSize, -1
		return
	}
	if w.pageSize == 0 {
		var hdr [walHeaderSize]byte
		if err := readAt(f, hdr[:], 0); err != nil {
			r.fail(fmt.Errorf("reading the log header: %w", err))
			return
		}
		w.pageSize = walPageSize(hdr[:])
	}
	if w.pageSize < minPageSize || w.pageSize > maxPageSize {
		r.fail(fmt.Errorf("the log header gives page size %d", w.pageSize))
		return
	}
	frame := walFrameHeaderSize + w.pageSize
	if w.base >= 0 && off < w.base {
		return // checksums rewritten in frames already committed
	}
	if (off-walHeaderSize)%frame == 0 && len(p) >= 8 {
		if w.base < 0 {
			// The first write since the recorder was attached starts a
			// transaction, right after the last committed frame.
			w.base = off
		}
		if binary.BigEndian.Uint32(p[offFrameCommit:]) != 0 {
			w.commitAt = off
		}
	}
	if w.commitAt >= 0 && off+int64(len(p)) >= w.commitAt+frame {
		end := w.commitAt + frame
		c, err := readFrames(f, w.base, end, w.pageSize)
		if err != nil {
			r.fail(err)
			return
		}
		r.commits = append(r.commits, c)
		w.base, w.commitAt = end, -1
	}
}

// walTruncated follows a truncation of the log (after a checkpoint): the
// next transaction writes a new log header first.
func (r *recorder) walTruncated(int64) { r.log.reset() }

// walPageSize reads the page size from a log header (65536 is stored as 1).
func walPageSize(hdr []byte) int64 {
	ps := int64(binary.BigEndian.Uint32(hdr[offWALPageSize:]))
	if ps == 1 {
		ps = maxPageSize
	}
	return ps
}

// readFrames reads the frames in [from, to) of the log and returns them
// as one commit: the last version of each page, up to the database size
// the last frame gives.
func readFrames(f vfs.File, from, to, pageSize int64) (driver.CapturedCommit, error) {
	frame := walFrameHeaderSize + pageSize
	if from < walHeaderSize || to <= from || (to-from)%frame != 0 {
		return driver.CapturedCommit{}, fmt.Errorf("log frames [%d, %d) are not whole %d-byte frames", from, to, frame)
	}
	buf := make([]byte, to-from)
	if err := readAt(f, buf, from); err != nil {
		return driver.CapturedCommit{}, fmt.Errorf("reading log frames [%d, %d): %w", from, to, err)
	}
	n := len(buf) / int(frame)
	latest := make(map[uint32]int, n) // page number -> frame index
	for i := range n {
		hdr := buf[i*int(frame):]
		pgno := binary.BigEndian.Uint32(hdr[offFramePgno:])
		if pgno == 0 {
			return driver.CapturedCommit{}, fmt.Errorf("log frame at %d has page number 0", from+int64(i)*frame)
		}
		latest[pgno] = i
	}
	count := binary.BigEndian.Uint32(buf[(n-1)*int(frame)+offFrameCommit:])
	pgnos := make([]uint32, 0, len(latest))
	for pgno := range latest {
		if pgno <= count {
			pgnos = append(pgnos, pgno)
		}
	}
	slices.Sort(pgnos)
	pages := make([]driver.Page, len(pgnos))
	for k, pgno := range pgnos {
		at := latest[pgno]*int(frame) + walFrameHeaderSize
		pages[k] = driver.Page{Pgno: pgno, Data: buf[at : at+int(pageSize) : at+int(pageSize)]}
	}
	return driver.CapturedCommit{PageSize: int(pageSize), PageCount: count, Pages: pages}, nil
}
