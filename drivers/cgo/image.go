//go:build cgo

package cgo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrInvalidImage is returned (wrapped, with the reason) by Restore for
// bytes that are not a SQLite database image; the database is left as it
// was.
var ErrInvalidImage = errors.New("cgo: invalid database image")

var sqliteMagic = []byte("SQLite format 3\x00")

// checkImage validates what Restore needs of an image: the header string,
// a valid page size, a length that is a whole number of pages, and the
// journal-mode bytes (18/19: 1 rollback journal, 2 WAL). An empty image is
// an empty database.
func checkImage(img []byte) error {
	return checkHeader(img[:min(len(img), 100)], int64(len(img)))
}

// checkHeader is checkImage for an image of size bytes whose first bytes
// (up to 100) are h.
func checkHeader(h []byte, size int64) error {
	if size == 0 {
		return nil
	}
	if size < 100 || len(h) < 100 || !bytes.Equal(h[:16], sqliteMagic) {
		return fmt.Errorf("%w: no SQLite header", ErrInvalidImage)
	}
	ps := int64(binary.BigEndian.Uint16(h[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return fmt.Errorf("%w: page size %d", ErrInvalidImage, ps)
	}
	if size%ps != 0 {
		return fmt.Errorf("%w: %d bytes is not a whole number of %d-byte pages", ErrInvalidImage, size, ps)
	}
	if h[18] != h[19] || (h[18] != 1 && h[18] != 2) {
		return fmt.Errorf("%w: file format bytes %d/%d", ErrInvalidImage, h[18], h[19])
	}
	return nil
}
