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
	page  []byte // one decompressed page
	comp  []byte // one page's compressed bytes
	file  hash.Hash64
	seq   hash.Hash64 // page numbers decoded, compared with the index's
	idx   hash.Hash64 // page numbers the index names
	check hash.Hash64 // a page's post-apply checksum
}

// blockReadSize is the read buffer: large reads from the store, few
// system calls, and small enough not to matter next to the write batches.
const blockReadSize = 256 << 10

var crcISO = crc64.MakeTable(crc64.ISO)

func newBlockDecoder() *blockDecoder {
	return &blockDecoder{
		br:    bufio.NewReaderSize(nil, blockReadSize),
		file:  crc64.New(crcISO),
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
	if _, err := io.ReadFull(d.br, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	d.file.Write(p)
	return nil
}

// decode reads the rest of a file whose header hb (already read, h) has
// been checked, passing each page to page as decodeStream does.
func (d *blockDecoder) decode(hb []byte, h Header, page func(pgno uint32, data []byte) error) error {
	if h.IsSnapshot() && h.Commit == 0 {
		return corrupt("snapshot with a zero page count", nil)
	}
	d.file.Reset()
	d.seq.Reset()
	d.idx.Reset()
	d.file.Write(hb)
	if cap(d.page) < int(h.PageSize) {
		d.page = make([]byte, h.PageSize)
	}
	data := d.page[:h.PageSize]
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
		if err := d.read(ph); err != nil {
			return corrupt(fmt.Sprintf("bad page after page %d", prev), err)
		}
		pgno, flags := binary.BigEndian.Uint32(ph), binary.BigEndian.Uint16(ph[4:])
		if pgno == 0 && flags == 0 {
			break
		}
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
		n, err := lz4.UncompressBlock(comp, data)
		if err != nil {
			return corrupt(fmt.Sprintf("bad page after page %d", prev), fmt.Errorf("decompress block: %w", err))
		}
		if n != len(data) {
			return corrupt(fmt.Sprintf("page %d decompresses to %d bytes, page size is %d", pgno, n, len(data)), nil)
		}
		// The file checksum covers the page's decompressed bytes, as the
		// codec computes it.
		d.file.Write(data)
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
	d.file.Write(trailer[:sf.TrailerChecksumOffset])
	if _, err := d.br.ReadByte(); err == nil {
		return corrupt("bad trailer or checksum", errors.New("unexpected data after trailer"))
	} else if !errors.Is(err, io.EOF) {
		return corrupt("bad trailer or checksum", fmt.Errorf("read after trailer: %w", err))
	}
	postSum := sf.Checksum(binary.BigEndian.Uint64(trailer[:]))
	fileSum := sf.Checksum(binary.BigEndian.Uint64(trailer[8:]))
	if sf.ChecksumFlag|sf.Checksum(d.file.Sum64()) != fileSum {
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
			d.file.Write(buf[:i])
			return 0, i, err
		}
		buf[i] = b
		if b < 0x80 {
			d.file.Write(buf[:i+1])
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
