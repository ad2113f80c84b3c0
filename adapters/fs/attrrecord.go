//go:build unix

package fs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/cellb/cellb/core/store"
)

// The record attribute comes in two layouts: the sidecar's JSON (with
// only Cur set), for records with metadata or content headers, and a
// compact binary one for records with neither, which is what every
// node-log bundle writes.
//
// Why two: ext4 keeps a file's extended attributes inside its inode only
// while they fit the inode's spare room (about 60 bytes of value with
// 256-byte inodes); a longer value takes an attribute block of its own,
// which the Put's file fsync must allocate and journal. Measured on ext4,
// a 178-byte JSON record made a durable new file about 7% slower, a
// 48-byte one cost nothing (docs/benchmarks.md). The compact record is
// 50 to 55 bytes for a 26-character version.
//
// Layout: attrCompactTag, the first 8 bytes of SHA-256 of the key (so a
// file moved to another key by another program is not taken for that
// key's object), the file's identity as three varints (inode, size,
// mtime), the version's length as a varint, then the version's bytes,
// which end the value.
const attrCompactTag = 0x01

// keyCheckSize is how much of the key's hash a compact record keeps.
const keyCheckSize = 8

// encodeAttr returns the attribute value recording rec as key's current
// object.
func encodeAttr(key string, rec *record) []byte {
	if len(rec.Metadata) > 0 || rec.Headers != nil {
		b, _ := encodeSidecar(&sidecar{Format: sidecarFormat, Key: key, Cur: rec})
		return b
	}
	h := keyHash(key)
	b := make([]byte, 0, 1+keyCheckSize+3*binary.MaxVarintLen64+len(rec.Version))
	b = append(b, attrCompactTag)
	b = append(b, h[:keyCheckSize]...)
	b = binary.AppendUvarint(b, rec.File.Ino)
	b = binary.AppendUvarint(b, uint64(rec.File.Size))
	b = binary.AppendVarint(b, rec.File.Mtime)
	b = binary.AppendUvarint(b, uint64(len(rec.Version)))
	return append(b, rec.Version...)
}

// decodeAttr parses a record attribute in either layout and checks that
// it belongs to key. Errors wrap errBadSidecar.
func decodeAttr(data []byte, key string) (*record, error) {
	if len(data) == 0 || data[0] != attrCompactTag {
		sc, err := decodeSidecar(data, key)
		if err != nil {
			return nil, err
		}
		return sc.Cur, nil
	}
	rest := data[1:]
	if len(rest) < keyCheckSize {
		return nil, fmt.Errorf("%w: compact record too short", errBadSidecar)
	}
	if h := keyHash(key); !bytes.Equal(rest[:keyCheckSize], h[:keyCheckSize]) {
		return nil, fmt.Errorf("%w: the compact record belongs to another key", errBadSidecar)
	}
	rest = rest[keyCheckSize:]
	var id identity
	var n int
	if id.Ino, n = binary.Uvarint(rest); n <= 0 {
		return nil, fmt.Errorf("%w: compact record: bad inode number", errBadSidecar)
	}
	rest = rest[n:]
	size, n := binary.Uvarint(rest)
	if n <= 0 || size > 1<<62 {
		return nil, fmt.Errorf("%w: compact record: bad size", errBadSidecar)
	}
	id.Size = int64(size)
	rest = rest[n:]
	if id.Mtime, n = binary.Varint(rest); n <= 0 {
		return nil, fmt.Errorf("%w: compact record: bad mtime", errBadSidecar)
	}
	rest = rest[n:]
	vlen, n := binary.Uvarint(rest)
	if n <= 0 || vlen != uint64(len(rest)-n) {
		return nil, fmt.Errorf("%w: compact record: bad version length", errBadSidecar)
	}
	v := rest[n:]
	if len(v) == 0 || !utf8.Valid(v) {
		return nil, fmt.Errorf("%w: compact record: bad version", errBadSidecar)
	}
	return &record{Version: store.Version(v), File: id}, nil
}
