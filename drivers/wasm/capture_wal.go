package wasm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

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
// fix checksums. So the recorder keeps a copy of every byte written from
// the first frame of the transaction on, and when the commit frame has been
// fully written, the copy of [base, end of the commit frame) is exactly the
// committed frames: SQLite writes a transaction's frames one after another,
// header and page, so each byte there was written by this transaction.
type walState struct {
	pageSize int64    // from the log header; 0 until known
	base     int64    // offset of the first frame after the last commit; -1 until known
	commitAt int64    // offset of the commit frame being written; -1 if none
	frames   []byte   // what was written to the log from base on
	order    []uint64 // scratch: page number << 32 | frame index
	verify   bool     // tests: also read the frames back and compare
}

func (w *walState) reset() {
	*w = walState{base: -1, commitAt: -1, frames: w.frames[:0], order: w.order[:0], verify: w.verify}
}

// keep copies a write at off into frames.
func (w *walState) keep(p []byte, off int64) {
	at := off - w.base
	if need := at + int64(len(p)); need > int64(len(w.frames)) {
		if need > int64(cap(w.frames)) {
			// Room for two frames at first; the buffer is then reused.
			frame := walFrameHeaderSize + w.pageSize
			grown := make([]byte, need, max(need, 2*int64(cap(w.frames)), 2*frame))
			copy(grown, w.frames)
			w.frames = grown
		} else {
			w.frames = w.frames[:need]
		}
	}
	copy(w.frames[at:], p)
}

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
		w.frames = w.frames[:0]
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
	if w.base < 0 {
		return
	}
	w.keep(p, off)
	if w.commitAt >= 0 && off+int64(len(p)) >= w.commitAt+frame {
		end := w.commitAt + frame
		err := r.storeFrames(w.frames[:end-w.base], w.base)
		if err == nil && w.verify {
			err = verifyFrames(f, w.frames[:end-w.base], w.base)
		}
		if err != nil {
			r.fail(err)
			return
		}
		w.base, w.commitAt, w.frames = end, -1, w.frames[:0]
	}
}

// verifyFrames checks the kept copy against the log file.
func verifyFrames(f vfs.File, kept []byte, from int64) error {
	disk := make([]byte, len(kept))
	if err := readAt(f, disk, from); err != nil {
		return err
	}
	if !bytes.Equal(disk, kept) {
		return fmt.Errorf("the kept log frames [%d, %d) differ from the file", from, from+int64(len(kept)))
	}
	return nil
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

// storeFrames adds buf, the log's frames from offset from on, to the store
// as one commit: the last version of each page, up to the database size
// the last frame gives.
func (r *recorder) storeFrames(buf []byte, from int64) error {
	w := &r.log
	frame := walFrameHeaderSize + w.pageSize
	if from < walHeaderSize || len(buf) == 0 || int64(len(buf))%frame != 0 {
		return fmt.Errorf("log bytes [%d, %d) are not whole %d-byte frames", from, from+int64(len(buf)), frame)
	}
	n := len(buf) / int(frame)
	w.order = w.order[:0]
	for i := range n {
		pgno := binary.BigEndian.Uint32(buf[i*int(frame)+offFramePgno:])
		if pgno == 0 {
			return fmt.Errorf("log frame at %d has page number 0", from+int64(i)*frame)
		}
		w.order = append(w.order, uint64(pgno)<<32|uint64(i))
	}
	slices.Sort(w.order)
	count := binary.BigEndian.Uint32(buf[(n-1)*int(frame)+offFrameCommit:])
	r.store.begin(int(w.pageSize), count)
	for k, key := range w.order {
		pgno := uint32(key >> 32)
		if pgno > count || (k+1 < len(w.order) && uint32(w.order[k+1]>>32) == pgno) {
			continue // beyond the database, or not the page's last frame
		}
		at := int(key&0xFFFFFFFF)*int(frame) + walFrameHeaderSize
		r.store.page(pgno, buf[at:at+int(w.pageSize)])
	}
	return nil
}
