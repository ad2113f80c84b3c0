package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Layout of the 100-byte header at the start of every SQLite database file.
const (
	headerSize          = 100
	offPageSize         = 16 // u16; 1 means 65536
	offWriteVersion     = 18 // 1 = rollback journal, 2 = WAL
	offReadVersion      = 19
	offChangeCounter    = 24
	offInHeaderPages    = 28
	offVersionValidFor  = 92
	minPageSize         = 512
	maxPageSize         = 65536
	journalModeRollback = 1
	journalModeWAL      = 2
)

var headerMagic = []byte("SQLite format 3\x00")

// ErrBadImage is returned (wrapped, with the reason) when bytes given to
// Restore are not a database image. The current database is left as it was.
var ErrBadImage = errors.New("drivers/wasm: not a SQLite database image")

// header is what the driver needs from a database header.
type header struct {
	pageSize int
	// inHeaderPages is the database size recorded in the header, or 0 when
	// the header does not vouch for it (a file written by a SQLite older
	// than 3.7.0, or an interrupted write): SQLite then uses the file size.
	inHeaderPages uint32
	walMode       bool
}

// parseHeader reads the fields the driver relies on and checks they are
// plausible. It never panics, whatever b holds.
func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize {
		return header{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrBadImage, len(b), headerSize)
	}
	if string(b[:len(headerMagic)]) != string(headerMagic) {
		return header{}, fmt.Errorf("%w: the header string is missing", ErrBadImage)
	}
	ps := int(binary.BigEndian.Uint16(b[offPageSize:]))
	if ps == 1 {
		ps = maxPageSize
	}
	if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		return header{}, fmt.Errorf("%w: page size %d is not a power of two between %d and %d", ErrBadImage, ps, minPageSize, maxPageSize)
	}
	h := header{pageSize: ps, walMode: b[offWriteVersion] == journalModeWAL || b[offReadVersion] == journalModeWAL}
	counter := binary.BigEndian.Uint32(b[offChangeCounter:])
	validFor := binary.BigEndian.Uint32(b[offVersionValidFor:])
	if counter == validFor {
		h.inHeaderPages = binary.BigEndian.Uint32(b[offInHeaderPages:])
	}
	return h, nil
}

// pageCount is the database size in pages for a file of fileSize bytes
// with this header, by SQLite's own rule: the header's count when it is
// valid and non-zero, else the file size.
func (h header) pageCount(fileSize int64) uint32 {
	if h.inHeaderPages != 0 {
		return h.inHeaderPages
	}
	return uint32(fileSize / int64(h.pageSize))
}

// checkImage validates a whole image given to Restore: a header, a size
// that is a whole number of pages, and at least as many pages as the
// header claims.
func checkImage(img []byte) (header, error) {
	h, err := parseHeader(img)
	if err != nil {
		return h, err
	}
	if len(img)%h.pageSize != 0 {
		return h, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte pages", ErrBadImage, len(img), h.pageSize)
	}
	if n := int64(len(img) / h.pageSize); h.inHeaderPages != 0 && int64(h.inHeaderPages) > n {
		return h, fmt.Errorf("%w: the header counts %d pages but the image holds %d", ErrBadImage, h.inHeaderPages, n)
	}
	if b := img[offWriteVersion]; b != journalModeRollback && b != journalModeWAL {
		return h, fmt.Errorf("%w: unsupported file format write version %d", ErrBadImage, b)
	}
	if b := img[offReadVersion]; b != journalModeRollback && b != journalModeWAL {
		return h, fmt.Errorf("%w: unsupported file format read version %d", ErrBadImage, b)
	}
	return h, nil
}
