package wal

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestParseHeaderRejects(t *testing.T) {
	good := newWAL(4096, false, 1, 2).bytes()[:HeaderSize]
	if _, err := ParseHeader(good); err != nil {
		t.Fatalf("good header: %v", err)
	}
	// Each mutation keeps the checksum consistent unless the checksum is
	// what is being broken, so the test shows each check on its own.
	reseal := func(b []byte) {
		c1, c2 := Checksum(binary.BigEndian.Uint32(b)&1 == 1, 0, 0, b[:24])
		binary.BigEndian.PutUint32(b[24:], c1)
		binary.BigEndian.PutUint32(b[28:], c2)
	}
	tests := []struct {
		name   string
		mutate func(b []byte)
	}{
		{"magic", func(b []byte) { binary.BigEndian.PutUint32(b, 0x377f0684); reseal(b) }},
		{"version", func(b []byte) { binary.BigEndian.PutUint32(b[4:], 3007001); reseal(b) }},
		{"page size 0", func(b []byte) { binary.BigEndian.PutUint32(b[8:], 0); reseal(b) }},
		{"page size 256", func(b []byte) { binary.BigEndian.PutUint32(b[8:], 256); reseal(b) }},
		{"page size 3000", func(b []byte) { binary.BigEndian.PutUint32(b[8:], 3000); reseal(b) }},
		{"page size 128K", func(b []byte) { binary.BigEndian.PutUint32(b[8:], 131072); reseal(b) }},
		{"checksum", func(b []byte) { b[31] ^= 0x40 }},
		{"salt changed", func(b []byte) { b[17] ^= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			tt.mutate(b)
			if _, err := ParseHeader(b); !errors.Is(err, ErrInvalidHeader) {
				t.Errorf("accepted: %v", err)
			}
			_, err := ReadCommits(bytesReader(b), Position{})
			if !errors.Is(err, ErrInvalidHeader) {
				t.Errorf("ReadCommits: %v", err)
			}
		})
	}
	if _, err := ParseHeader(good[:31]); !errors.Is(err, ErrInvalidHeader) {
		t.Errorf("short header: %v", err)
	}
}

func TestHeaderPageSizes(t *testing.T) {
	for ps := MinPageSize; ps <= MaxPageSize; ps *= 2 {
		h, err := ParseHeader(newWAL(ps, ps%2048 == 0, 5, 6).bytes())
		if err != nil || h.PageSize != ps || h.FrameSize() != int64(ps+FrameHeaderSize) {
			t.Errorf("page size %d: %+v %v", ps, h, err)
		}
	}
}

// The vectors' headers were written by SQLite; their checksums check the
// checksum function against SQLite's own.
func TestVectorHeadersParse(t *testing.T) {
	for _, rel := range []string{"sample.wal", "wal-reader/ok/wal", "wal-reader/frame-salts/wal"} {
		h, err := ParseHeader(readVector(t, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if h.Version != FormatVersion || h.PageSize != 4096 || h.BigEndianChecksum() {
			t.Errorf("%s: %+v", rel, h)
		}
	}
}

func TestChecksumRejectsOddLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a 12-byte input")
		}
	}()
	Checksum(false, 0, 0, make([]byte, 12))
}

func TestStopReasonString(t *testing.T) {
	for r, want := range map[StopReason]string{StopEnd: "end of file", StopSalt: "salt mismatch", StopChecksum: "checksum mismatch", StopPgno: "invalid page number", 9: "StopReason(9)"} {
		if r.String() != want {
			t.Errorf("%d: %q", int(r), r.String())
		}
	}
}
