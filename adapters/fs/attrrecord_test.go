//go:build unix

package fs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cellb/cellb/core/store"
	"golang.org/x/sys/unix"
)

// inodeAttrRoom is the largest attribute value ext4 keeps inside a
// 256-byte inode under attrName (measured: 60 bytes fit, 64 take a block).
const inodeAttrRoom = 60

// TestCompactAttr: a record without metadata or headers encodes compactly,
// small enough to stay in an ext4 inode, and decodes to itself for its
// key only; a record with metadata keeps the JSON layout.
func TestCompactAttr(t *testing.T) {
	const key = "log/node-0123456789abcdef/0000000001/bundle/e1-00000042.ltxb"
	rec := &record{Version: newVersion(), File: identity{Ino: 1 << 40, Size: 1 << 20, Mtime: 1_800_000_000_123_456_789}}
	b := encodeAttr(key, rec)
	if b[0] != attrCompactTag {
		t.Fatalf("a record without metadata encoded as %q", b)
	}
	if len(b) > inodeAttrRoom {
		t.Fatalf("compact record is %d bytes, more than the %d an ext4 inode holds", len(b), inodeAttrRoom)
	}
	got, err := decodeAttr(b, key)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, rec)
	}
	if _, err := decodeAttr(b, key+"x"); !errors.Is(err, errBadSidecar) {
		t.Fatalf("another key's compact record decoded: %v", err)
	}
	for i := range b {
		if _, err := decodeAttr(b[:i], key); err == nil {
			t.Fatalf("a compact record cut to %d bytes decoded", i)
		}
	}

	md := &record{Version: newVersion(), File: rec.File, Metadata: map[string]string{"a": "b"}}
	b = encodeAttr(key, md)
	if b[0] != '{' {
		t.Fatalf("a record with metadata encoded as %q", b)
	}
	if got, err := decodeAttr(b, key); err != nil || !reflect.DeepEqual(got, md) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, md)
	}
}

// TestPutWritesCompactAttr: a Put without metadata records the object in
// the compact layout, and reads and lists it with its version.
func TestPutWritesCompactAttr(t *testing.T) {
	dir := t.TempDir()
	if !attrsWork(t, dir) {
		t.Skip("the temporary directory's file system has no user extended attributes")
	}
	s := openT(t, dir)
	const key = "log/n1/0000000001/bundle/e1-00000001.ltxb"
	v := putT(t, s, key, "bundle", store.PutOptions{Condition: store.IfAbsent})
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(filepath.Join(dir, key), attrName, buf)
	if err != nil {
		t.Fatal(err)
	}
	if buf[0] != attrCompactTag || n > inodeAttrRoom {
		t.Fatalf("the attribute is %d bytes, tag %#x", n, buf[0])
	}
	if o := getT(t, s, key); o.Version != v || o.Metadata != nil {
		t.Fatalf("read %q %v, want %q", o.Version, o.Metadata, v)
	}
	if l := listAll(t, s, store.ListOptions{}); len(l.Objects) != 1 || l.Objects[0].Version != v {
		t.Fatalf("listing %+v", l.Objects)
	}
	// Moved to another key by another program, the record no longer
	// speaks for the file.
	other := filepath.Join(dir, "log/n1/0000000001/bundle/moved")
	if err := os.Rename(filepath.Join(dir, key), other); err != nil {
		t.Fatal(err)
	}
	if o := getT(t, s, "log/n1/0000000001/bundle/moved"); o.Version == v {
		t.Fatalf("a moved file kept its version under the new key")
	}
}
