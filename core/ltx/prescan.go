package ltx

import (
	"encoding/binary"
	"fmt"

	"github.com/pierrec/lz4/v4"
	sf "github.com/superfly/ltx"
)

// prescan walks the page block before the codec does and rejects any
// length field that points past the end of the input or beyond what a page
// can compress to. The codec allocates a buffer of whatever size a block
// page's length field claims, so without this a 300-byte hostile file
// could ask for gigabytes.
func prescan(data []byte, pageSize uint32) error {
	bound := uint32(lz4.CompressBlockBound(int(pageSize)))
	off := sf.HeaderSize
	for n := 0; ; n++ {
		if off+sf.PageHeaderSize > len(data) {
			return corrupt("truncated inside the page block", nil)
		}
		pgno := binary.BigEndian.Uint32(data[off:])
		flags := binary.BigEndian.Uint16(data[off+4:])
		off += sf.PageHeaderSize
		if pgno == 0 && flags == 0 {
			return nil
		}
		if flags&sf.PageHeaderFlagSize != 0 {
			if off+4 > len(data) {
				return corrupt("truncated page size field", nil)
			}
			size := binary.BigEndian.Uint32(data[off:])
			off += 4
			if size > bound || uint64(off)+uint64(size) > uint64(len(data)) {
				return corrupt(fmt.Sprintf("page %d claims %d compressed bytes (at most %d fit)", pgno, size, min(bound, uint32(len(data)-off))), nil)
			}
			off += int(size)
			continue
		}
		end, err := skipLZ4Frame(data, off)
		if err != nil {
			return corrupt(fmt.Sprintf("page %d", pgno), err)
		}
		off = end
	}
}

// skipLZ4Frame returns the offset just past the LZ4 frame starting at off
// (legacy LTX pages are one whole frame each). It checks lengths only; the
// codec verifies the content.
func skipLZ4Frame(b []byte, off int) (int, error) {
	need := func(n int) error {
		if off+n > len(b) {
			return fmt.Errorf("LZ4 frame truncated")
		}
		return nil
	}
	if err := need(7); err != nil {
		return 0, err
	}
	if binary.LittleEndian.Uint32(b[off:]) != 0x184D2204 {
		return 0, fmt.Errorf("bad LZ4 frame magic")
	}
	flg := b[off+4]
	off += 6 // magic, FLG, BD
	if flg&0x08 != 0 {
		off += 8 // content size
	}
	if flg&0x01 != 0 {
		off += 4 // dictionary id
	}
	off++ // header checksum
	for {
		if err := need(4); err != nil {
			return 0, err
		}
		size := binary.LittleEndian.Uint32(b[off:])
		off += 4
		if size == 0 {
			break
		}
		n := int(size & 0x7fffffff)
		if n > 4<<20 {
			return 0, fmt.Errorf("LZ4 block of %d bytes", n)
		}
		if flg&0x10 != 0 {
			n += 4 // block checksum
		}
		if err := need(n); err != nil {
			return 0, err
		}
		off += n
	}
	if flg&0x04 != 0 {
		if err := need(4); err != nil {
			return 0, err
		}
		off += 4 // content checksum
	}
	return off, nil
}
