package wal

import "encoding/binary"

// Checksum continues SQLite's WAL checksum (s1, s2) over b, whose length
// must be a multiple of 8. The words are 32-bit, big-endian when bigEndian
// is set (magic 0x377f0683) and little-endian otherwise. A frame's checksum
// is Checksum over its first 8 header bytes, then over its page, starting
// from the previous frame's checksum (or the header's, for the first
// frame).
func Checksum(bigEndian bool, s1, s2 uint32, b []byte) (uint32, uint32) {
	if len(b)%8 != 0 {
		panic("wal: checksum input length is not a multiple of 8")
	}
	if bigEndian {
		for ; len(b) >= 8; b = b[8:] {
			x := binary.BigEndian.Uint64(b)
			s1 += uint32(x>>32) + s2
			s2 += uint32(x) + s1
		}
		return s1, s2
	}
	for ; len(b) >= 8; b = b[8:] {
		x := binary.LittleEndian.Uint64(b)
		s1 += uint32(x) + s2
		s2 += uint32(x>>32) + s1
	}
	return s1, s2
}
