package ltx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pierrec/lz4/v4"
	sf "github.com/superfly/ltx"

	"github.com/cellb/cellb/core/page"
)

// Written is what EncodeTo wrote: the file's length and its trailer.
type Written struct {
	Size              int64
	PostApplyChecksum uint64
	FileChecksum      uint64
}

// EncodeTo writes to w, page by page, the LTX file Encode would return for
// the same header and pages: next yields the pages in ascending order (ok
// false after the last) and is called only when the previous page has been
// compressed and written, so the caller may reuse a page's buffer for the
// next one. Nothing but one page and the codec's buffers is held; the page
// index is kept (a few bytes per page) until the end. The checks are
// Encode's: a page out of order, beyond Commit, at the lock page or of the
// wrong size, or a snapshot missing a page, fails with ErrInvalidInput —
// after part of the file was written, so w must then be discarded. Page 1
// is written in WAL mode (WALHeaderPage), as celld writes it.
func EncodeTo(w io.Writer, h Header, next func() (page.Page, bool, error)) (Written, error) {
	if h.Flags == 0 {
		h.Flags = HeaderFlagNoChecksum
	}
	if h.Flags&HeaderFlagNoChecksum != 0 {
		h.PreApplyChecksum = 0
	}
	cw := &countingWriter{w: w}
	enc, err := sf.NewEncoder(cw)
	if err != nil {
		return Written{}, err
	}
	// Past spillAfter pages the index goes to a temporary file and is
	// copied into the output at the end (the same bytes), so a large
	// snapshot's index is not held either.
	enc.SetSpillDir(os.TempDir())
	enc.SetSpillThreshold(spillAfter)
	defer enc.Cleanup()
	if err := enc.EncodeHeader(toSF(h)); err != nil {
		return Written{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	lock := h.LockPgno()
	var prev uint32
	for {
		p, ok, err := next()
		if err != nil {
			return Written{}, err
		}
		if !ok {
			break
		}
		switch {
		case p.Pgno <= prev:
			return Written{}, fmt.Errorf("%w: page %d follows page %d", ErrInvalidInput, p.Pgno, prev)
		case p.Pgno > h.Commit:
			return Written{}, fmt.Errorf("%w: page %d beyond commit %d", ErrInvalidInput, p.Pgno, h.Commit)
		case p.Pgno == lock:
			return Written{}, fmt.Errorf("%w: page %d is the lock page", ErrInvalidInput, p.Pgno)
		case len(p.Data) != int(h.PageSize):
			return Written{}, fmt.Errorf("%w: page %d has %d bytes, page size is %d", ErrInvalidInput, p.Pgno, len(p.Data), h.PageSize)
		}
		if h.IsSnapshot() {
			want := prev + 1
			if want == lock {
				want++
			}
			if p.Pgno != want {
				return Written{}, fmt.Errorf("%w: snapshot is missing page %d", ErrInvalidInput, want)
			}
		}
		prev = p.Pgno
		if err := enc.EncodePage(sf.PageHeader{Pgno: p.Pgno}, WALHeaderPage(p.Pgno, p.Data)); err != nil {
			return Written{}, fmt.Errorf("encode page %d: %w", p.Pgno, err)
		}
	}
	if h.IsSnapshot() {
		last := h.Commit
		if last == lock {
			last--
		}
		if prev != last {
			return Written{}, fmt.Errorf("%w: snapshot ends at page %d, database has %d pages", ErrInvalidInput, prev, h.Commit)
		}
	}
	if err := enc.Close(); err != nil {
		return Written{}, fmt.Errorf("encode LTX: %w", err)
	}
	if cw.err != nil {
		return Written{}, cw.err
	}
	tr := enc.Trailer()
	return Written{Size: cw.n, PostApplyChecksum: uint64(tr.PostApplyChecksum), FileChecksum: uint64(tr.FileChecksum)}, nil
}

// spillAfter is how many page index entries (24 bytes each) EncodeTo keeps
// in memory: 16 Ki, a 64 MiB database of 4 KiB pages.
const spillAfter = 16 << 10

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Trailer reads the trailer of a whole file: the last TrailerSize bytes
// (the post-apply checksum, then the file checksum). It checks only the
// length; Decode verifies the checksum.
func Trailer(tail []byte) (postApply, file uint64, err error) {
	if len(tail) < sf.TrailerSize {
		return 0, 0, corrupt(fmt.Sprintf("only %d bytes, shorter than a trailer", len(tail)), nil)
	}
	t := tail[len(tail)-sf.TrailerSize:]
	return binary.BigEndian.Uint64(t), binary.BigEndian.Uint64(t[8:]), nil
}

// HeaderSize is the length of an LTX file's header.
const HeaderSize = sf.HeaderSize

// TrailerSize is the length of an LTX file's trailer.
const TrailerSize = sf.TrailerSize

// ApplyFrom is ApplyData reading the file from r as it arrives (a bucket
// download, say): pages are decoded and laid over the image one at a time,
// so nothing file-sized is held. A file in the block page layout is decoded
// by blockDecoder, whose buffers (one read buffer, one page, one compressed
// page) the image keeps from file to file, so a restore allocates nothing
// per page; its size fields are checked against what a page can compress
// to. A file in the legacy layout goes through the codec, behind a guard
// that checks each length field the same way before the codec reads it.
// On error the image is left unusable.
func (im *Image) ApplyFrom(r io.Reader) (Header, error) {
	if im.dec == nil {
		im.dec = newBlockDecoder()
	}
	// The page function is made once begin has set the page size.
	var pf func(pgno uint32, page []byte) error
	begin := func(h Header) error {
		if err := im.begin(h); err != nil {
			return err
		}
		pf = im.pageFunc()
		return nil
	}
	h, checked, err := decodeFrom(im.dec, r, begin, func(pgno uint32, page []byte) error { return pf(pgno, page) })
	if err != nil {
		if checked {
			im.applied = -1 << 30 // poisoned
		}
		return h, err
	}
	im.finish(h)
	return h, nil
}

// decodeFrom reads one file from r with d's buffers: the header, then
// check (which may refuse it), then each page in order. checked reports
// whether check accepted the header (so pages may have been passed on
// before an error).
func decodeFrom(d *blockDecoder, r io.Reader, check func(Header) error, page func(pgno uint32, data []byte) error) (h Header, checked bool, err error) {
	d.br.Reset(r)
	defer d.br.Reset(nil) // hold no reference to r
	hb := make([]byte, sf.HeaderSize)
	if _, err := io.ReadFull(d.br, hb); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, false, corrupt("truncated inside the header", err)
		}
		return Header{}, false, err
	}
	h, err = DecodeHeader(hb)
	if err != nil {
		return h, false, err
	}
	if err := check(h); err != nil {
		return h, false, err
	}
	if d.isBlockLayout() {
		err = d.decode(hb, h, page)
	} else {
		g := &guardReader{r: d.br, bound: uint32(lz4.CompressBlockBound(int(h.PageSize)))}
		_, _, err = decodeStream(io.MultiReader(bytesReader(hb), g), func(Header) error { return nil }, page)
	}
	return h, true, err
}

// PageDecoder decodes LTX files page by page as they are read, with the
// checks and the reused buffers of Image.ApplyFrom, for callers that do
// something else with the pages than build an image (a compaction merging
// a run of files). Not safe for concurrent use.
type PageDecoder struct{ d *blockDecoder }

// NewPageDecoder returns a decoder whose buffers are reused from file to
// file.
func NewPageDecoder() *PageDecoder { return &PageDecoder{d: newBlockDecoder()} }

// DecodeFrom reads one file from r: once its header is read, check (nil:
// accept) may refuse it; then page gets every page in ascending order. The
// data passed to page is valid only during the call. Like ApplyFrom,
// nothing file-sized is held, and a corrupt file (bad checksum, index or
// length field) fails with a *CorruptError — possibly after some pages
// were passed on, which the caller must then discard.
func (p *PageDecoder) DecodeFrom(r io.Reader, check func(Header) error, page func(pgno uint32, data []byte) error) (Header, error) {
	if check == nil {
		check = func(Header) error { return nil }
	}
	h, _, err := decodeFrom(p.d, r, check, page)
	return h, err
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b: b} }

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// guardReader passes an LTX file's bytes after its header to the codec,
// but only bytes it has already walked: before handing over a page header,
// a block page's size field or an LZ4 frame's block length, it peeks at the
// field and fails with a *CorruptError if it claims more than a page can
// compress to. After the page block's end marker it passes the rest (page
// index and trailer, which the codec reads without trusting a length) as
// is. Truncation shows as the codec's unexpected EOF.
type guardReader struct {
	r     *bufio.Reader
	bound uint32
	safe  int  // bytes already walked and not yet passed on
	done  bool // past the page block
	err   error
	// state for LZ4 frames (legacy page layout)
	inFrame  bool
	frameFlg byte
	pgno     uint32
}

func (g *guardReader) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	for !g.done && g.safe == 0 {
		if err := g.walk(); err != nil {
			g.err = err
			return 0, err
		}
	}
	if !g.done && len(p) > g.safe {
		p = p[:g.safe]
	}
	n, err := g.r.Read(p)
	if !g.done {
		g.safe -= n
	}
	return n, err
}

// peek returns the next n bytes past the walked ones; at the end of the
// input it lets the walk stop, so the codec meets the truncation itself.
func (g *guardReader) peek(n int) ([]byte, bool) {
	b, err := g.r.Peek(g.safe + n)
	if err != nil {
		return nil, false
	}
	return b[g.safe:], true
}

// walk advances safe over the next structural element.
func (g *guardReader) walk() error {
	if g.inFrame {
		return g.walkFrameBlock()
	}
	b, ok := g.peek(sf.PageHeaderSize)
	if !ok {
		g.done = true // truncated: the codec reports it
		return nil
	}
	g.pgno = binary.BigEndian.Uint32(b)
	flags := binary.BigEndian.Uint16(b[4:])
	g.safe += sf.PageHeaderSize
	if g.pgno == 0 && flags == 0 {
		g.done = true
		return nil
	}
	if flags&sf.PageHeaderFlagSize != 0 {
		s, ok := g.peek(4)
		if !ok {
			g.done = true
			return nil
		}
		size := binary.BigEndian.Uint32(s)
		if size > g.bound {
			return corrupt(fmt.Sprintf("page %d claims %d compressed bytes (at most %d fit)", g.pgno, size, g.bound), nil)
		}
		g.safe += 4 + int(size)
		return nil
	}
	// A legacy page: one LZ4 frame. Walk its header now, its blocks next.
	f, ok := g.peek(7)
	if !ok {
		g.done = true
		return nil
	}
	if binary.LittleEndian.Uint32(f) != 0x184D2204 {
		return corrupt(fmt.Sprintf("page %d", g.pgno), fmt.Errorf("bad LZ4 frame magic"))
	}
	g.frameFlg = f[4]
	n := 7
	if g.frameFlg&0x08 != 0 {
		n += 8
	}
	if g.frameFlg&0x01 != 0 {
		n += 4
	}
	g.safe += n
	g.inFrame = true
	return nil
}

func (g *guardReader) walkFrameBlock() error {
	b, ok := g.peek(4)
	if !ok {
		g.done = true
		return nil
	}
	size := binary.LittleEndian.Uint32(b)
	g.safe += 4
	if size == 0 {
		if g.frameFlg&0x04 != 0 {
			g.safe += 4 // content checksum
		}
		g.inFrame = false
		return nil
	}
	n := int(size & 0x7fffffff)
	if n > 4<<20 {
		return corrupt(fmt.Sprintf("page %d", g.pgno), fmt.Errorf("LZ4 block of %d bytes", n))
	}
	if g.frameFlg&0x10 != 0 {
		n += 4
	}
	g.safe += n
	return nil
}
