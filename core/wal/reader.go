package wal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/cellb/cellb/core/page"
)

// ErrInvalidPosition is returned for a Position that cannot come from a
// previous ReadCommits on a log with that page size.
var ErrInvalidPosition = errors.New("wal: invalid position")

// Position is where incremental reading resumes: the state right after the
// last commit a reader returned. The zero Position means "nothing read yet":
// reading starts at the log's first frame.
type Position struct {
	// Salt1 and Salt2 identify the log generation Offset belongs to.
	Salt1, Salt2 uint32
	// Offset is the byte offset just past the last commit frame read.
	Offset int64
	// Checksum1 and Checksum2 are the running checksum at Offset.
	Checksum1, Checksum2 uint32
}

// IsZero reports whether p is the zero Position.
func (p Position) IsZero() bool { return p == Position{} }

// Commit is one complete transaction read from the log.
type Commit struct {
	// DBSize is the database size in pages after the commit.
	DBSize uint32
	// Pages holds the final version of every page the transaction wrote,
	// in ascending Pgno order, none beyond DBSize. Each Data is exactly the
	// header's page size long and belongs to the caller (see ReadCommits).
	Pages []page.Page
	// Offset and Size are the byte range of the transaction's frames.
	Offset, Size int64
	// Frames counts the transaction's frames, including pages written
	// more than once.
	Frames int
}

// StopReason says why ReadCommits stopped reading frames.
type StopReason int

const (
	// StopEnd: the file ends (possibly inside a frame).
	StopEnd StopReason = iota
	// StopSalt: a frame's salts differ from the header's; typically a
	// frame left over from the generation before the last restart.
	StopSalt
	// StopChecksum: a frame's checksum does not continue the chain; a
	// torn write, or a frame of a rolled-back transaction.
	StopChecksum
	// StopPgno: a frame names page 0.
	StopPgno
)

func (r StopReason) String() string {
	switch r {
	case StopEnd:
		return "end of file"
	case StopSalt:
		return "salt mismatch"
	case StopChecksum:
		return "checksum mismatch"
	case StopPgno:
		return "invalid page number"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// Batch is what one ReadCommits call found.
type Batch struct {
	// Header is the log's header; zero if the file has no complete
	// header yet (an empty or freshly truncated log).
	Header Header
	// Reset reports that the log was restarted (new salts) since the
	// position passed in: reading began at the new generation's first
	// frame. Commits of the old generation that had not been read are
	// gone.
	Reset bool
	// Commits are the complete transactions found, in log order.
	Commits []Commit
	// Next is the position to pass to the next call: just past the last
	// commit returned, or the position passed in when there was none.
	Next Position
	// Uncommitted counts valid frames after the last commit: an unfinished
	// transaction, left for a later call.
	Uncommitted int
	// Stop says why reading ended, and StopOffset where.
	Stop       StopReason
	StopOffset int64
}

// ReadCommits reads the complete transactions appended to the log in f
// since from. It is ReadCommits on a zero Reader.
func ReadCommits(f io.ReaderAt, from Position) (Batch, error) {
	var r Reader
	return r.ReadCommits(f, from)
}

// Reader reads commits incrementally. It holds no state between calls
// (the position is the caller's); the zero value is ready to use. A Reader
// is not safe for concurrent use.
type Reader struct {
	// Pages, when set, changes where returned pages live: frames are read
	// into one buffer the Reader keeps and reuses, and each page a commit
	// returns is copied into a buffer taken from Pages (pages a commit
	// overwrote, or left unfinished, go straight back). The caller then
	// hands the buffers back when done (driver.CapturedCommit.Release), and
	// a reader following a busy log allocates nothing per commit.
	Pages *page.Pool

	hdr     [HeaderSize]byte
	scratch []byte
}

// maxScratch bounds the read buffer a Reader keeps between calls; one a
// large transaction needed is dropped when the call returns.
const maxScratch = 256 << 10

// Read sizes: without a known file size, reading starts with a few frames
// and grows, so the common case (one small commit appended) stays cheap;
// no single read exceeds maxChunk.
const (
	firstChunkFrames = 4
	maxChunk         = 1 << 20
)

// ReadCommits reads the complete transactions appended to the log in f
// since from, validating salts and the running checksum and stopping at the
// first frame that fails either. Frames after the last commit frame are
// left for a later call. When the header's salts differ from from's, the
// log was restarted and reading starts at its first frame (Batch.Reset).
//
// If f reports its size (a Size() int64 method, as io.SectionReader and
// bytes.Reader have, or Stat, as *os.File has), reading stops there;
// otherwise it reads until a short read. Without r.Pages, the returned
// pages share the buffers the frames were read into, which are allocated
// for this call and never reused, so they stay valid and unchanged; with
// r.Pages, each is a buffer of its own from that pool.
//
// A file shorter than a header yields an empty Batch with Next == from. An
// invalid header is an error wrapping ErrInvalidHeader; read errors are
// returned as they are. On error the Batch has Next == from, so the caller
// may simply retry.
func (r *Reader) ReadCommits(f io.ReaderAt, from Position) (Batch, error) {
	empty := Batch{Next: from, Stop: StopEnd}
	n, err := f.ReadAt(r.hdr[:], 0)
	if n < HeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			return empty, nil
		}
		return empty, fmt.Errorf("wal: read header: %w", err)
	}
	h, err := ParseHeader(r.hdr[:])
	if err != nil {
		return empty, err
	}
	b := Batch{Header: h, Next: from}
	pos := from
	if from.IsZero() || from.Salt1 != h.Salt1 || from.Salt2 != h.Salt2 {
		b.Reset = !from.IsZero()
		pos = Position{Salt1: h.Salt1, Salt2: h.Salt2, Offset: HeaderSize, Checksum1: h.Checksum1, Checksum2: h.Checksum2}
		b.Next = pos
	} else if err := checkOffset(from, h); err != nil {
		return empty, err
	}
	err = r.readFrames(f, h, pos, from, &b)
	return b, err
}

// ReadCommitsFrom continues reading from's generation of the log under h,
// the header of an earlier Batch, without reading the file's header again:
// one read fewer for a caller that reads after every commit.
//
// It cannot see a restart by itself. Frames written after a restart carry
// other salts and end the read, but frames left over from from's own
// generation, beyond from, would be read as current. Use it only when every
// commit of that generation was read before the log could be checkpointed
// (as a capturing driver ensures), so that such left-over frames hold no
// commit; and when it returns no commit, call ReadCommits to learn whether
// the log was restarted.
func (r *Reader) ReadCommitsFrom(f io.ReaderAt, from Position, h Header) (Batch, error) {
	empty := Batch{Next: from, Stop: StopEnd}
	if from.IsZero() || from.Salt1 != h.Salt1 || from.Salt2 != h.Salt2 || h.PageSize == 0 {
		return empty, fmt.Errorf("%w: not a position in the generation of the given header", ErrInvalidPosition)
	}
	if err := checkOffset(from, h); err != nil {
		return empty, err
	}
	b := Batch{Header: h, Next: from}
	err := r.readFrames(f, h, from, from, &b)
	return b, err
}

func checkOffset(p Position, h Header) error {
	if p.Offset < HeaderSize || (p.Offset-HeaderSize)%h.FrameSize() != 0 {
		return fmt.Errorf("%w: offset %d is not a frame boundary for page size %d", ErrInvalidPosition, p.Offset, h.PageSize)
	}
	return nil
}

// readFrames reads the frames from pos on into b. On a read error it
// resets b to report nothing past from.
func (r *Reader) readFrames(f io.ReaderAt, h Header, pos, from Position, b *Batch) error {
	frameSize := h.FrameSize()
	size := sizeOf(f)
	be := h.BigEndianChecksum()
	s1, s2 := pos.Checksum1, pos.Checksum2
	off := pos.Offset
	tx := txBuilder{pool: r.Pages, pageSize: int(h.PageSize)}
	defer tx.discard()
	defer r.dropLargeScratch()
	txStart := off
	want := firstChunkFrames * frameSize
	for {
		if size >= 0 {
			want = min(want, (size-off)/frameSize*frameSize)
		}
		want = max(min(want, maxChunk/frameSize*frameSize), 0)
		var buf []byte
		n := 0
		if want > 0 {
			buf = r.buffer(int(want))
			var err error
			n, err = f.ReadAt(buf, off)
			if err != nil && !errors.Is(err, io.EOF) {
				*b = Batch{Next: from, Stop: StopEnd}
				return fmt.Errorf("wal: read frames at %d: %w", off, err)
			}
		}
		whole := n / int(frameSize)
		for i := range whole {
			frame := buf[i*int(frameSize) : (i+1)*int(frameSize) : (i+1)*int(frameSize)]
			fh := ParseFrameHeader(frame)
			stop, bad := StopEnd, false
			switch {
			case fh.Salt1 != h.Salt1 || fh.Salt2 != h.Salt2:
				stop, bad = StopSalt, true
			case fh.Pgno == 0:
				stop, bad = StopPgno, true
			default:
				c1, c2 := Checksum(be, s1, s2, frame[:8])
				c1, c2 = Checksum(be, c1, c2, frame[FrameHeaderSize:])
				if c1 != fh.Checksum1 || c2 != fh.Checksum2 {
					stop, bad = StopChecksum, true
				} else {
					s1, s2 = c1, c2
				}
			}
			if bad {
				b.Stop, b.StopOffset = stop, off
				b.Uncommitted = tx.frames
				return nil
			}
			tx.add(fh.Pgno, frame[FrameHeaderSize:])
			off += frameSize
			if fh.IsCommit() {
				b.Commits = append(b.Commits, tx.commit(fh.DBSize, txStart, off))
				b.Next = Position{Salt1: h.Salt1, Salt2: h.Salt2, Offset: off, Checksum1: s1, Checksum2: s2}
				txStart = off
			}
		}
		if int64(n) < want || want == 0 {
			b.Stop, b.StopOffset = StopEnd, off
			b.Uncommitted = tx.frames
			return nil
		}
		want *= 4
	}
}

// buffer returns n bytes to read frames into: fresh ones when returned
// pages share them (no pool), else the reused scratch buffer, grown as
// needed (see dropLargeScratch).
func (r *Reader) buffer(n int) []byte {
	if r.Pages == nil {
		return make([]byte, n)
	}
	if cap(r.scratch) < n {
		r.scratch = make([]byte, n)
	}
	return r.scratch[:n]
}

// dropLargeScratch lets go of a scratch buffer a large transaction grew
// past maxScratch, so an idle connection does not keep it.
func (r *Reader) dropLargeScratch() {
	if cap(r.scratch) > maxScratch {
		r.scratch = nil
	}
}

// sizeOf returns f's size when f can tell it cheaply, or -1.
func sizeOf(f io.ReaderAt) int64 {
	switch v := f.(type) {
	case interface{ Size() int64 }:
		return v.Size()
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// txBuilder gathers the frames of one transaction.
type txBuilder struct {
	pages  []page.Page
	frames int
	// pool, when set, is where each page is copied to, since the buffer
	// the frame was read into will be reused.
	pool     *page.Pool
	pageSize int
}

func (t *txBuilder) add(pgno uint32, data []byte) {
	if t.pool != nil {
		own := t.pool.Get(t.pageSize)
		copy(own, data)
		data = own
	}
	t.pages = append(t.pages, page.Page{Pgno: pgno, Data: data})
	t.frames++
}

// commit returns the transaction's final pages and starts the next one.
// A page written twice (SQLite spilled it before the commit) keeps its
// last version; pages beyond the new database size are dropped.
func (t *txBuilder) commit(dbSize uint32, start, end int64) Commit {
	pages := t.pages
	slices.SortStableFunc(pages, func(a, b page.Page) int { return cmp.Compare(a.Pgno, b.Pgno) })
	out := pages[:0]
	for i, p := range pages {
		if p.Pgno > dbSize || (i+1 < len(pages) && pages[i+1].Pgno == p.Pgno) {
			// Past the end, or a later version of this page follows.
			t.pool.Put(p.Data)
			continue
		}
		out = append(out, p)
	}
	clear(pages[len(out):])
	c := Commit{DBSize: dbSize, Pages: out, Offset: start, Size: end - start, Frames: t.frames}
	t.pages, t.frames = nil, 0
	return c
}

// discard hands the pages of an unfinished transaction back to the pool.
func (t *txBuilder) discard() {
	for _, p := range t.pages {
		t.pool.Put(p.Data)
	}
	t.pages = nil
}
