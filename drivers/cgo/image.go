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
	if len(img) == 0 {
		return nil
	}
	if len(img) < 100 || !bytes.Equal(img[:16], sqliteMagic) {
		return fmt.Errorf("%w: no SQLite header", ErrInvalidImage)
	}
	ps := int(binary.BigEndian.Uint16(img[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return fmt.Errorf("%w: page size %d", ErrInvalidImage, ps)
	}
	if len(img)%ps != 0 {
		return fmt.Errorf("%w: %d bytes is not a whole number of %d-byte pages", ErrInvalidImage, len(img), ps)
	}
	if img[18] != img[19] || (img[18] != 1 && img[18] != 2) {
		return fmt.Errorf("%w: file format bytes %d/%d", ErrInvalidImage, img[18], img[19])
	}
	return nil
}
