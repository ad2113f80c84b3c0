package shard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func slots(s0, s1 []byte) []byte {
	out := make([]byte, 0, 2*slotSize)
	out = append(out, pad(s0)...)
	if s1 != nil {
		out = append(out, pad(s1)...)
	}
	return out
}

func pad(b []byte) []byte {
	if b == nil {
		return make([]byte, slotSize)
	}
	return b
}

func torn(epoch uint64) []byte {
	b := encodeSlot(epoch)
	b[7] ^= 0x40 // a byte of the epoch half-written
	return b
}

func TestDecodeEpoch(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want uint64
		bad  bool
	}{
		{"new file", nil, 0, false},
		{"first grant", slots(nil, encodeSlot(1)), 1, false},
		{"second grant", slots(encodeSlot(2), encodeSlot(1)), 2, false},
		{"third grant", slots(encodeSlot(2), encodeSlot(3)), 3, false},
		{"first grant torn", slots(nil, torn(1)), 0, false},
		{"first grant torn short", slots(nil, torn(1)[:5]), 0, false},
		{"second grant torn", slots(torn(2), encodeSlot(1)), 1, false},
		{"later grant torn", slots(encodeSlot(40), torn(41)), 40, false},
		{"only slot 0 written", encodeSlot(2), 2, false},
		{"only slot 0, short", encodeSlot(2)[:9], 0, true},
		{"both damaged", slots(torn(8), torn(9)), 0, true},
		{"slot 0 damaged, slot 1 never written", slots(torn(2), nil), 0, true},
		{"epoch in the wrong slot", slots(encodeSlot(3), nil), 0, true},
		{"not a shard file", []byte("#!/bin/sh\necho hello world, how are you\n"), 0, true},
		{"trailing bytes ignored", append(slots(encodeSlot(6), encodeSlot(5)), "xyz"...), 6, false},
	}
	for _, c := range cases {
		got, err := decodeEpoch(c.data)
		if c.bad {
			if err == nil {
				t.Errorf("%s: decoded %d from damaged data", c.name, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}

// FuzzDecodeEpoch: any file content decodes to an error or to the largest
// epoch stored in a valid slot, never to anything else, and never panics.
func FuzzDecodeEpoch(f *testing.F) {
	f.Add([]byte{})
	f.Add(slots(encodeSlot(2), encodeSlot(1)))
	f.Add(slots(nil, torn(1)))
	f.Add(slots(torn(4), encodeSlot(3)))
	f.Add([]byte("CBSE"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeEpoch(data)
		if err != nil {
			return
		}
		var valid []uint64
		for i := 0; i < 2 && i*slotSize+slotSize <= len(data); i++ {
			s := data[i*slotSize : (i+1)*slotSize]
			if e, st := decodeSlot(s, i); st == slotValid {
				valid = append(valid, e)
			}
		}
		want := uint64(0)
		for _, e := range valid {
			want = max(want, e)
		}
		if got != want {
			t.Fatalf("decoded %d, but the valid slots hold %v", got, valid)
		}
		if len(valid) == 0 && len(data) > 0 && !allZero(data[:min(len(data), slotSize)]) {
			t.Fatalf("decoded %d from data whose slot 0 is neither valid nor empty", got)
		}
	})
}

// TestSlotFormat pins the on-disk slot, as TestOfVectors pins the hash.
func TestSlotFormat(t *testing.T) {
	b := encodeSlot(0x0102030405060708)
	if !bytes.Equal(b[:12], []byte("CBSE\x01\x02\x03\x04\x05\x06\x07\x08")) || len(b) != slotSize {
		t.Fatalf("slot bytes %x", b)
	}
	// CRC-32 (IEEE) of the first 12 bytes, as zlib.crc32 computes it.
	if crc := binary.BigEndian.Uint32(b[12:]); crc != 0x2ec22fee {
		t.Fatalf("slot CRC %#x, want 0x2ec22fee", crc)
	}
}

// TestWriteEpochSurvivesTornWrite: damaging the newest slot on disk falls
// back to the epoch before it, which is the last one a grant could have
// been handed out under.
func TestWriteEpochSurvivesTornWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard-0.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for e := uint64(1); e <= 5; e++ {
		if err := writeEpoch(f, e); err != nil {
			t.Fatal(err)
		}
		if got, err := readEpoch(f); err != nil || got != e {
			t.Fatalf("after writing %d: read %d, %v", e, got, err)
		}
	}
	if _, err := f.WriteAt(torn(7), 1*slotSize); err != nil {
		t.Fatal(err)
	}
	if got, err := readEpoch(f); err != nil || got != 4 {
		t.Fatalf("with the newest slot torn: read %d, %v; want 4", got, err)
	}
	if _, err := f.WriteAt(torn(6), 0); err != nil {
		t.Fatal(err)
	}
	var de *DamagedError
	if _, err := readEpoch(f); !errors.As(err, &de) || de.Path != path {
		t.Fatalf("both slots damaged: %v, want *DamagedError for %s", err, path)
	}
}
