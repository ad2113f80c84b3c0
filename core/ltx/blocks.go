package ltx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"io"
	"math"

	"github.com/pierrec/lz4/v4"
	sf "github.com/superfly/ltx"
)

// blockDecoder decodes, for ApplyFrom, an LTX file whose pages use the LZ4
// block layout (a size field before each compressed page: what the
// encoder writes since superfly/ltx 0.5.2). It checks what the codec's
// Decoder checks — the page index against the decoded pages, the trailer,
// the file checksum, a snapshot's post-apply checksum — and what
// decodeStream adds, but reuses its buffers from file to file: the codec
// allocates each page's compressed bytes anew, which for a restore is as
// much garbage as the files are large, and that garbage, not the live
// heap, set a restore's peak memory. Files in the legacy layout (an LZ4
// frame per page) still go through the codec.
type blockDecoder struct {
	br    *bufio.Reader
	comp  []byte      // one page's compressed bytes
	c     uint64      // the file checksum so far, pages counted as zeros
	seq   hash.Hash64 // page numbers decoded, compared with the index's
	idx   hash.Hash64 // page numbers the index names
	check hash.Hash64 // a page's post-apply checksum

	// The CRC-64 of the pages' bytes, most of a restore's CPU, is taken
	// by another goroutine (pageSums) while this one reads and
	// decompresses; the two halves are joined at the end of the page
	// block, which CRC's linearity allows (see pageSums).
	ps     int
	zeros  *zeroShift
	chunks [][]byte // whole pages, about chunkBytes each, taking turns
}

// Pages are handed to the checksum goroutine a chunk (chunkBytes, at
// least one page) at a time; chunksInFlight chunks take turns, so the
// decoder holds 512 KiB of them whatever the page size.
const (
	chunkBytes     = 128 << 10
	chunksInFlight = 4
)

// blockReadSize is the read buffer: large reads from the store, few
// system calls, and small enough not to matter next to the write batches.
const blockReadSize = 256 << 10

var crcISO = crc64.MakeTable(crc64.ISO)

func newBlockDecoder() *blockDecoder {
	return &blockDecoder{
		br:    bufio.NewReaderSize(nil, blockReadSize),
		seq:   crc64.New(crcISO),
		idx:   crc64.New(crcISO),
		check: crc64.New(crcISO),
	}
}

// isBlockLayout peeks at the first page header: true when it uses the
// block layout or the file holds no page (the end marker comes first).
func (d *blockDecoder) isBlockLayout() bool {
	b, err := d.br.Peek(sf.PageHeaderSize)
	if err != nil {
		return true // truncated: the block decoder reports it
	}
	flags := binary.BigEndian.Uint16(b[4:])
	return flags&sf.PageHeaderFlagSize != 0 || (binary.BigEndian.Uint32(b) == 0 && flags == 0)
}

// read fills p from the file and hashes it.
func (d *blockDecoder) read(p []byte) error {
	if err := d.readRaw(p); err != nil {
		return err
	}
	d.c = crc64.Update(d.c, crcISO, p)
	return nil
}

// readRaw fills p from the file.
func (d *blockDecoder) readRaw(p []byte) error {
	if _, err := io.ReadFull(d.br, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// decode reads the rest of a file whose header hb (already read, h) has
// been checked, passing each page to page as decodeStream does.
func (d *blockDecoder) decode(hb []byte, h Header, page func(pgno uint32, data []byte) error) error {
	if h.IsSnapshot() && h.Commit == 0 {
		return corrupt("snapshot with a zero page count", nil)
	}
	d.seq.Reset()
	d.idx.Reset()
	d.c = crc64.Update(0, crcISO, hb)
	if d.ps != int(h.PageSize) {
		d.ps = int(h.PageSize)
		d.zeros = newZeroShift(d.ps)
		d.chunks = make([][]byte, chunksInFlight)
		for i := range d.chunks {
			d.chunks[i] = make([]byte, 0, max(1, chunkBytes/d.ps)*d.ps)
		}
	}
	sums := startPageSums(d.chunks, d.ps)
	defer sums.stop()
	chunk := sums.next()
	bound := lz4.CompressBlockBound(int(h.PageSize))
	if cap(d.comp) < bound {
		d.comp = make([]byte, bound)
	}
	postApply := h.IsSnapshot() && h.Flags&HeaderFlagNoChecksum == 0
	var chksum sf.Checksum
	if postApply {
		chksum = sf.ChecksumFlag
	}
	lock := h.LockPgno()
	var prev uint32
	var pages int
	var fixed [sf.PageHeaderSize + 4]byte
	for {
		ph := fixed[:sf.PageHeaderSize]
		if err := d.readRaw(ph); err != nil {
			return corrupt(fmt.Sprintf("bad page after page %d", prev), err)
		}
		pgno, flags := binary.BigEndian.Uint32(ph), binary.BigEndian.Uint16(ph[4:])
		if pgno == 0 && flags == 0 {
			// Join the pages' checksum to the rest, then count the end
			// marker, read before the join.
			d.c = crc64.Update(d.c^sums.finish(chunk), crcISO, ph)
			break
		}
		d.c = crc64.Update(d.c, crcISO, ph)
		switch {
		case pgno == 0:
			return corrupt("page number 0", nil)
		case flags&^sf.PageHeaderFlagSize != 0:
			return corrupt(fmt.Sprintf("bad page after page %d", prev), fmt.Errorf("invalid page header flags: 0x%04x", flags))
		case flags == 0:
			return corrupt(fmt.Sprintf("page %d is in the LZ4 frame layout, the file's first page in the block layout", pgno), nil)
		case pgno <= prev:
			return corrupt(fmt.Sprintf("page %d follows page %d: pages out of order", pgno, prev), nil)
		case pgno > h.Commit:
			return corrupt(fmt.Sprintf("page %d is beyond the commit size of %d pages", pgno, h.Commit), nil)
		case pgno == lock:
			return corrupt(fmt.Sprintf("page %d is the lock page", pgno), nil)
		}
		if h.IsSnapshot() {
			want := prev + 1
			if want == lock {
				want++
			}
			if pgno != want {
				return corrupt(fmt.Sprintf("snapshot skips from page %d to page %d", prev, pgno), nil)
			}
		}
		sb := fixed[sf.PageHeaderSize:]
		if err := d.read(sb); err != nil {
			return corrupt(fmt.Sprintf("bad page after page %d", prev), fmt.Errorf("read data size: %w", err))
		}
		size := binary.BigEndian.Uint32(sb)
		if size > uint32(bound) {
			return corrupt(fmt.Sprintf("page %d claims %d compressed bytes (at most %d fit)", pgno, size, bound), nil)
		}
		comp := d.comp[:size]
		if _, err := io.ReadFull(d.br, comp); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return corrupt(fmt.Sprintf("bad page after page %d", prev), fmt.Errorf("read compressed data: %w", err))
		}
		if len(chunk) == cap(chunk) {
			chunk = sums.pass(chunk)
		}
		data := chunk[len(chunk) : len(chunk)+d.ps]
		chunk = chunk[:len(chunk)+d.ps]
		n, err := lz4.UncompressBlock(comp, data)
		if err != nil {
			return corrupt(fmt.Sprintf("bad page after page %d", prev), fmt.Errorf("decompress block: %w", err))
		}
		if n != len(data) {
			return corrupt(fmt.Sprintf("page %d decompresses to %d bytes, page size is %d", pgno, n, len(data)), nil)
		}
		// The file checksum covers the page's decompressed bytes, as the
		// codec computes it: here as zeros, their own share in pageSums.
		d.c = d.zeros.apply(d.c)
		hashPgno(d.seq, pgno)
		if postApply {
			chksum = sf.ChecksumFlag | (chksum ^ sf.ChecksumPageWithHasher(d.check, pgno, data))
		}
		prev = pgno
		pages++
		if err := page(pgno, data); err != nil {
			return err
		}
	}
	if h.IsSnapshot() {
		last := h.Commit
		if last == lock {
			last--
		}
		if prev != last {
			return corrupt(fmt.Sprintf("snapshot ends at page %d but the database has %d pages", prev, h.Commit), nil)
		}
	}
	if err := d.index(h, pages); err != nil {
		return corrupt("bad trailer or checksum", fmt.Errorf("read page index: %w", err))
	}
	var trailer [sf.TrailerSize]byte
	if _, err := io.ReadFull(d.br, trailer[:]); err != nil {
		return corrupt("bad trailer or checksum", fmt.Errorf("read trailer: %w", err))
	}
	d.c = crc64.Update(d.c, crcISO, trailer[:sf.TrailerChecksumOffset])
	if _, err := d.br.ReadByte(); err == nil {
		return corrupt("bad trailer or checksum", errors.New("unexpected data after trailer"))
	} else if !errors.Is(err, io.EOF) {
		return corrupt("bad trailer or checksum", fmt.Errorf("read after trailer: %w", err))
	}
	postSum := sf.Checksum(binary.BigEndian.Uint64(trailer[:]))
	fileSum := sf.Checksum(binary.BigEndian.Uint64(trailer[8:]))
	if sf.ChecksumFlag|sf.Checksum(d.c) != fileSum {
		return corrupt("bad trailer or checksum", sf.ErrChecksumMismatch)
	}
	if postApply && postSum != chksum {
		return corrupt("bad trailer or checksum", fmt.Errorf("post-apply checksum in trailer (%s) does not match calculated checksum (%s)", postSum, chksum))
	}
	return nil
}

// index reads and checks the page index (hashing its bytes into the file
// checksum) without keeping it: ascending page numbers within the commit
// size, frames after the header that do not overlap, exactly the pages
// decoded, and the size field after the end marker.
func (d *blockDecoder) index(h Header, pages int) error {
	var consumed int64
	var prev uint32
	next := int64(sf.HeaderSize)
	n := 0
	for {
		pgno, k, err := d.uvarint()
		consumed += int64(k)
		if err != nil {
			return fmt.Errorf("read page index pgno: %w", err)
		}
		if pgno == 0 {
			break
		}
		if pgno > math.MaxUint32 {
			return fmt.Errorf("page index pgno %d out of range", pgno)
		}
		if uint32(pgno) <= prev {
			return fmt.Errorf("page index out of order: %d after %d", pgno, prev)
		}
		offset, k, err := d.uvarint()
		consumed += int64(k)
		if err != nil {
			return fmt.Errorf("read page index offset: %w", err)
		}
		size, k, err := d.uvarint()
		consumed += int64(k)
		if err != nil {
			return fmt.Errorf("read page index size: %w", err)
		}
		if offset > math.MaxInt64 || size > math.MaxInt64 {
			return fmt.Errorf("page index pgno %d offset/size out of range", pgno)
		}
		p, off, sz := uint32(pgno), int64(offset), int64(size)
		switch {
		case p > h.Commit:
			return fmt.Errorf("page index pgno %d exceeds commit %d", p, h.Commit)
		case off < next:
			return fmt.Errorf("page index pgno %d offset %d overlaps previous frame ending at %d", p, off, next)
		case sz <= sf.PageHeaderSize || off > math.MaxInt64-sz:
			return fmt.Errorf("page index pgno %d has invalid frame size %d", p, sz)
		}
		next = off + sz
		prev = p
		n++
		hashPgno(d.idx, p)
	}
	var sb [8]byte
	if err := d.read(sb[:]); err != nil {
		return fmt.Errorf("read page index size: %w", err)
	}
	if size := binary.BigEndian.Uint64(sb[:]); size != uint64(consumed) {
		return fmt.Errorf("page index size mismatch: field=%d read=%d", size, consumed)
	}
	if n != pages {
		return fmt.Errorf("page index has %d entries but %d pages were decoded", n, pages)
	}
	if d.idx.Sum64() != d.seq.Sum64() {
		return errors.New("page index does not match the decoded page numbers")
	}
	return nil
}

// uvarint reads one unsigned varint, hashing its bytes; k is how many.
func (d *blockDecoder) uvarint() (x uint64, k int, err error) {
	var buf [binary.MaxVarintLen64]byte
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := d.br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && i > 0 {
				err = io.ErrUnexpectedEOF
			}
			d.c = crc64.Update(d.c, crcISO, buf[:i])
			return 0, i, err
		}
		buf[i] = b
		if b < 0x80 {
			d.c = crc64.Update(d.c, crcISO, buf[:i+1])
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, i + 1, errors.New("uvarint overflows 64 bits")
			}
			return x | uint64(b)<<s, i + 1, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, binary.MaxVarintLen64, errors.New("uvarint overflows 64 bits")
}

// hashPgno feeds pgno into a page-sequence hash.
func hashPgno(h hash.Hash64, pgno uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], pgno)
	h.Write(b[:])
}

// pageSums takes the CRC-64 share of a file's pages on its own goroutine.
// CRC-64 is affine in its input, so the checksum of the whole file is the
// checksum of the file with every page's bytes replaced by zeros (which
// the decoder takes, a table lookup per page: zeroShift) XOR the raw
// (zero start, no final inversion) CRC of the file with everything but the
// pages' bytes replaced by zeros, which is what this goroutine computes:
// between two pages it only shifts over the 10 bytes of page header and
// size field; before the first page the register is still 0.
type pageSums struct {
	todo chan []byte
	free chan []byte
	done chan uint64
	open bool
}

func startPageSums(chunks [][]byte, ps int) *pageSums {
	p := &pageSums{todo: make(chan []byte, len(chunks)), free: make(chan []byte, len(chunks)), done: make(chan uint64, 1), open: true}
	for _, c := range chunks {
		p.free <- c[:0]
	}
	go func() {
		var gap [sf.PageHeaderSize + 4]byte
		u := ^uint64(0) // Update's form of a raw register of 0
		for c := range p.todo {
			for off := 0; off+ps <= len(c); off += ps {
				u = crc64.Update(crc64.Update(u, crcISO, gap[:]), crcISO, c[off:off+ps])
			}
			p.free <- c[:0]
		}
		p.done <- ^u
	}()
	return p
}

// next is an empty chunk to decompress pages into.
func (p *pageSums) next() []byte { return <-p.free }

// pass hands a full chunk over and returns an empty one.
func (p *pageSums) pass(c []byte) []byte {
	p.todo <- c
	return <-p.free
}

// finish hands the last chunk over and returns the pages' share.
func (p *pageSums) finish(c []byte) uint64 {
	if len(c) > 0 {
		p.todo <- c
	}
	close(p.todo)
	p.open = false
	return <-p.done
}

// stop ends the goroutine if finish did not (a file that failed).
func (p *pageSums) stop() {
	if p.open {
		close(p.todo)
		p.open = false
		<-p.done
	}
}

// zeroShift appends a page of zero bytes to a CRC-64 (as crc64.Update
// would) with eight table lookups instead of a page of work. Appending
// zeros to Update's value c gives ^S(^c), S linear over GF(2); t holds S
// byte by byte.
type zeroShift struct{ t [8][256]uint64 }

func newZeroShift(n int) *zeroShift {
	z := &zeroShift{}
	zeros := make([]byte, n)
	var basis [64]uint64
	for i := range basis {
		basis[i] = ^crc64.Update(^(uint64(1) << i), crcISO, zeros)
	}
	for k := range z.t {
		for b := 1; b < 256; b++ {
			low := b & -b
			bit := 0
			for 1<<bit != low {
				bit++
			}
			z.t[k][b] = z.t[k][b&(b-1)] ^ basis[8*k+bit]
		}
	}
	return z
}

func (z *zeroShift) apply(c uint64) uint64 {
	x := ^c
	return ^(z.t[0][byte(x)] ^ z.t[1][byte(x>>8)] ^ z.t[2][byte(x>>16)] ^ z.t[3][byte(x>>24)] ^
		z.t[4][byte(x>>32)] ^ z.t[5][byte(x>>40)] ^ z.t[6][byte(x>>48)] ^ z.t[7][byte(x>>56)])
}
