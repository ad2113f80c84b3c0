package ltx

import (
	"bytes"
	"encoding/binary"
	"hash/crc64"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pierrec/lz4/v4"
	sf "github.com/superfly/ltx"
)

// legacyFile writes pages in the legacy layout older writers used: each
// page one whole LZ4 frame (no size field), with its index and checksum.
func legacyFile(t *testing.T, h Header, pages [][]byte) []byte {
	t.Helper()
	h.Flags = HeaderFlagNoChecksum
	hb, err := func() ([]byte, error) { sh := toSF(h); return sh.MarshalBinary() }()
	if err != nil {
		t.Fatal(err)
	}
	sum := crc64.New(crc64.MakeTable(crc64.ISO))
	var out bytes.Buffer
	out.Write(hb)
	sum.Write(hb)
	var index []byte
	for i, data := range pages {
		pgno := uint32(i + 1)
		off := out.Len()
		ph := make([]byte, sf.PageHeaderSize)
		binary.BigEndian.PutUint32(ph, pgno)
		out.Write(ph)
		sum.Write(ph)
		zw := lz4.NewWriter(&out)
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		sum.Write(data)
		index = binary.AppendUvarint(index, uint64(pgno))
		index = binary.AppendUvarint(index, uint64(off))
		index = binary.AppendUvarint(index, uint64(out.Len()-off))
	}
	end := make([]byte, sf.PageHeaderSize)
	out.Write(end)
	sum.Write(end)
	index = binary.AppendUvarint(index, 0)
	index = binary.BigEndian.AppendUint64(index, uint64(len(index)))
	out.Write(index)
	sum.Write(index)
	post := make([]byte, 8)
	sum.Write(post)
	out.Write(post)
	out.Write(binary.BigEndian.AppendUint64(nil, uint64(sf.ChecksumFlag)|sum.Sum64()))
	return out.Bytes()
}

// TestLegacyFramesStream: a file in the legacy page layout decodes the same
// whole and streamed (one byte at a time through the guard), and a frame
// block claiming more than 4 MiB is refused by the streaming guard.
func TestLegacyFramesStream(t *testing.T) {
	var pages [][]byte
	for i := range 5 {
		p := bytes.Repeat([]byte{byte(i + 1)}, 1024)
		binary.BigEndian.PutUint32(p, uint32(i*7919))
		pages = append(pages, p)
	}
	data := legacyFile(t, Header{PageSize: 1024, Commit: 5, MinTXID: 1, MaxTXID: 1, Timestamp: 3}, pages)
	if _, err := Decode(data); err != nil {
		t.Fatalf("the whole-file decoder refuses the legacy file: %v", err)
	}
	whole, stream := NewImage(), NewImage()
	if _, err := whole.ApplyData(data); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.ApplyFrom(iotest.OneByteReader(bytes.NewReader(data))); err != nil {
		t.Fatalf("streamed: %v", err)
	}
	a, _ := whole.Bytes()
	b, _ := stream.Bytes()
	if !bytes.Equal(a, b) || !bytes.Equal(a[:1024], pages[0]) {
		t.Fatal("the streamed legacy file gives another image")
	}
	// The first frame's first block length: after the page header, the
	// frame's magic, FLG, BD and header checksum.
	bad := bytes.Clone(data)
	at := sf.HeaderSize + sf.PageHeaderSize + 7
	if bad[sf.HeaderSize+sf.PageHeaderSize+4]&0x08 != 0 {
		at += 8
	}
	binary.LittleEndian.PutUint32(bad[at:], 64<<20)
	var ce *CorruptError
	if _, err := NewImage().ApplyFrom(bytes.NewReader(bad)); !asCorrupt(err, &ce) || !strings.Contains(err.Error(), "LZ4 block of 67108864 bytes") {
		t.Fatalf("a 64 MiB frame block: %v, want a *CorruptError", err)
	}
}

func asCorrupt(err error, ce **CorruptError) bool {
	if err == nil {
		return false
	}
	c, ok := err.(*CorruptError)
	*ce = c
	return ok
}
