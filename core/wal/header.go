package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of the fixed parts of a WAL file.
const (
	HeaderSize      = 32
	FrameHeaderSize = 24
)

// Magic numbers: the low bit selects the byte order of the checksum words
// (0: little-endian, 1: big-endian); the header itself is always big-endian.
const (
	MagicLittleEndian uint32 = 0x377f0682
	MagicBigEndian    uint32 = 0x377f0683
)

// FormatVersion is the only WAL format version SQLite has written so far.
const FormatVersion uint32 = 3007000

// Page size limits accepted in a WAL header.
const (
	MinPageSize = 512
	MaxPageSize = 65536
)

// ErrInvalidHeader is returned (wrapped, with the reason) for a WAL header
// SQLite itself would not accept: bad magic, version, page size or checksum.
var ErrInvalidHeader = errors.New("wal: invalid header")

// Header is a WAL file header.
type Header struct {
	Magic         uint32
	Version       uint32
	PageSize      int
	CheckpointSeq uint32
	Salt1, Salt2  uint32
	// Checksum1 and Checksum2 cover the first 24 header bytes; they seed
	// the running checksum of the first frame.
	Checksum1, Checksum2 uint32
}

// BigEndianChecksum reports whether checksum words are read big-endian.
func (h Header) BigEndianChecksum() bool { return h.Magic&1 == 1 }

// FrameSize is the size of one frame: frame header plus page.
func (h Header) FrameSize() int64 { return FrameHeaderSize + int64(h.PageSize) }

// ParseHeader decodes and validates the first HeaderSize bytes of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, want %d", ErrInvalidHeader, len(b), HeaderSize)
	}
	be := binary.BigEndian
	h := Header{
		Magic:         be.Uint32(b[0:]),
		Version:       be.Uint32(b[4:]),
		CheckpointSeq: be.Uint32(b[12:]),
		Salt1:         be.Uint32(b[16:]),
		Salt2:         be.Uint32(b[20:]),
		Checksum1:     be.Uint32(b[24:]),
		Checksum2:     be.Uint32(b[28:]),
	}
	if h.Magic != MagicLittleEndian && h.Magic != MagicBigEndian {
		return Header{}, fmt.Errorf("%w: magic %#08x", ErrInvalidHeader, h.Magic)
	}
	if h.Version != FormatVersion {
		return Header{}, fmt.Errorf("%w: format version %d, want %d", ErrInvalidHeader, h.Version, FormatVersion)
	}
	ps := be.Uint32(b[8:])
	if ps < MinPageSize || ps > MaxPageSize || ps&(ps-1) != 0 {
		return Header{}, fmt.Errorf("%w: page size %d", ErrInvalidHeader, ps)
	}
	h.PageSize = int(ps)
	c1, c2 := Checksum(h.BigEndianChecksum(), 0, 0, b[:24])
	if c1 != h.Checksum1 || c2 != h.Checksum2 {
		return Header{}, fmt.Errorf("%w: checksum %08x%08x, computed %08x%08x", ErrInvalidHeader, h.Checksum1, h.Checksum2, c1, c2)
	}
	return h, nil
}

// FrameHeader is the 24-byte header in front of every page in the log.
type FrameHeader struct {
	Pgno uint32
	// DBSize is the database size in pages after the transaction this frame
	// commits; zero for every frame but a transaction's last.
	DBSize               uint32
	Salt1, Salt2         uint32
	Checksum1, Checksum2 uint32
}

// IsCommit reports whether the frame ends a transaction.
func (f FrameHeader) IsCommit() bool { return f.DBSize != 0 }

// ParseFrameHeader decodes the first FrameHeaderSize bytes of b; it panics
// if b is shorter, like a slice expression would.
func ParseFrameHeader(b []byte) FrameHeader {
	_ = b[FrameHeaderSize-1]
	be := binary.BigEndian
	return FrameHeader{
		Pgno:      be.Uint32(b[0:]),
		DBSize:    be.Uint32(b[4:]),
		Salt1:     be.Uint32(b[8:]),
		Salt2:     be.Uint32(b[12:]),
		Checksum1: be.Uint32(b[16:]),
		Checksum2: be.Uint32(b[20:]),
	}
}
