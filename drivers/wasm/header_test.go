package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// validImage builds a minimal database image (by hand, not through
// SQLite): pages of pageSize bytes, the header saying so.
func validImage(pageSize, pages int, counter uint32) []byte {
	img := make([]byte, pageSize*pages)
	copy(img, headerMagic)
	ps := uint16(pageSize)
	if pageSize == maxPageSize {
		ps = 1
	}
	binary.BigEndian.PutUint16(img[offPageSize:], ps)
	img[offWriteVersion], img[offReadVersion] = 1, 1
	binary.BigEndian.PutUint32(img[offChangeCounter:], counter)
	binary.BigEndian.PutUint32(img[offInHeaderPages:], uint32(pages))
	binary.BigEndian.PutUint32(img[offVersionValidFor:], counter)
	return img
}

func TestParseHeader(t *testing.T) {
	for _, ps := range []int{512, 1024, 4096, 65536} {
		h, err := parseHeader(validImage(ps, 2, 7))
		if err != nil || h.pageSize != ps || h.inHeaderPages != 2 || h.walMode {
			t.Errorf("page size %d: %+v, %v", ps, h, err)
		}
	}
	// A header whose size field is stale (counter and version-valid-for
	// differ) does not vouch for the size: the file size decides.
	img := validImage(4096, 3, 7)
	binary.BigEndian.PutUint32(img[offVersionValidFor:], 6)
	h, err := parseHeader(img)
	if err != nil || h.inHeaderPages != 0 || h.pageCount(int64(len(img))) != 3 {
		t.Errorf("stale size field: %+v, %v", h, err)
	}
	img = validImage(4096, 1, 1)
	img[offWriteVersion], img[offReadVersion] = 2, 2
	if h, _ := parseHeader(img); !h.walMode {
		t.Error("WAL bytes not seen")
	}
}

func TestCheckImageRejects(t *testing.T) {
	good := validImage(4096, 3, 5)
	cases := map[string][]byte{
		"empty":              {},
		"short":              good[:99],
		"no magic":           append([]byte("SQLite format 2\x00"), good[16:]...),
		"page size 768":      withUint16(good, offPageSize, 768),
		"page size 256":      withUint16(good, offPageSize, 256),
		"partial page":       good[:len(good)-10],
		"header counts more": withUint32(good, offInHeaderPages, 4),
		"write version 3":    withByte(good, offWriteVersion, 3),
		"read version 0":     withByte(good, offReadVersion, 0),
	}
	for name, img := range cases {
		if _, err := checkImage(img); !errors.Is(err, ErrBadImage) {
			t.Errorf("%s: %v, want ErrBadImage", name, err)
		}
	}
	if _, err := checkImage(good); err != nil {
		t.Errorf("good image: %v", err)
	}
}

func TestPrepareImage(t *testing.T) {
	img := validImage(1024, 4, 9)
	binary.BigEndian.PutUint32(img[offInHeaderPages:], 3) // a longer file than the database
	img[offWriteVersion], img[offReadVersion] = 2, 2
	orig := bytes.Clone(img)
	for _, wal := range []bool{false, true} {
		out, err := prepareImage(img, wal)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 3*1024 {
			t.Errorf("wal=%v: %d bytes, want the header's 3 pages", wal, len(out))
		}
		want := byte(1)
		if wal {
			want = 2
		}
		if out[offWriteVersion] != want || out[offReadVersion] != want {
			t.Errorf("wal=%v: bytes 18/19 = %d/%d", wal, out[offWriteVersion], out[offReadVersion])
		}
		if !bytes.Equal(out[offReadVersion+1:], orig[offReadVersion+1:3*1024]) || !bytes.Equal(out[:offWriteVersion], orig[:offWriteVersion]) {
			t.Errorf("wal=%v: bytes other than 18/19 changed", wal)
		}
	}
	if !bytes.Equal(img, orig) {
		t.Error("prepareImage changed its argument")
	}
	if out, err := prepareImage(nil, false); out != nil || err != nil {
		t.Errorf("empty image: %v, %v", out, err)
	}
}

func withUint16(b []byte, off int, v uint16) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint16(b[off:], v)
	return b
}

func withUint32(b []byte, off int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[off:], v)
	return b
}

// FuzzCheckImage: whatever the bytes, checking never panics, and an
// accepted image is a whole number of valid pages that prepareImage can
// install.
func FuzzCheckImage(f *testing.F) {
	f.Add(validImage(512, 1, 1))
	f.Add(validImage(4096, 2, 3))
	f.Add(withByte(validImage(1024, 2, 3), offWriteVersion, 2))
	f.Add(withUint32(validImage(1024, 2, 3), offVersionValidFor, 0))
	f.Add([]byte("SQLite format 3\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, img []byte) {
		h, err := checkImage(img)
		if err != nil {
			if !errors.Is(err, ErrBadImage) {
				t.Fatalf("error %v does not wrap ErrBadImage", err)
			}
			return
		}
		if h.pageSize < minPageSize || h.pageSize > maxPageSize || h.pageSize&(h.pageSize-1) != 0 {
			t.Fatalf("accepted page size %d", h.pageSize)
		}
		if len(img)%h.pageSize != 0 || len(img) == 0 {
			t.Fatalf("accepted %d bytes with page size %d", len(img), h.pageSize)
		}
		out, err := prepareImage(img, false)
		if err != nil {
			t.Fatalf("prepareImage after checkImage accepted: %v", err)
		}
		if len(out)%h.pageSize != 0 || len(out) > len(img) || len(out) == 0 {
			t.Fatalf("prepared %d bytes from %d", len(out), len(img))
		}
	})
}
