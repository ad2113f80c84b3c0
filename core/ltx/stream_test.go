package ltx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"runtime"
	"testing"
	"testing/iotest"

	sf "github.com/superfly/ltx"

	"github.com/cellb/cellb/core/page"
)

// TestApplyFromGolden: celld's golden chain, read one byte at a time,
// rebuilds the same image as the whole-file path, byte for byte.
func TestApplyFromGolden(t *testing.T) {
	files := loadGolden(t)
	whole, stream := NewImage(), NewImage()
	for i, b := range files {
		if _, err := whole.ApplyData(b); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.ApplyFrom(iotest.OneByteReader(bytes.NewReader(b))); err != nil {
			t.Fatalf("%s: %v", golden[i].name, err)
		}
	}
	a, _ := whole.Bytes()
	b, err := stream.Bytes()
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("streamed image differs from the whole-file one (err %v)", err)
	}
}

// TestApplyFromRefusesCorruption: every single-byte change of a golden file
// that the whole-file decoder refuses, the streaming one refuses too, with a
// typed error. (The header is left alone: both paths read it the same way,
// and a changed page count would size the image before any page is read.)
func TestApplyFromRefusesCorruption(t *testing.T) {
	b := loadGolden(t)[0]
	for i := sf.HeaderSize; i < len(b); i++ {
		bad := bytes.Clone(b)
		bad[i] ^= 0x5a
		_, werr := NewImage().ApplyData(bad)
		_, serr := NewImage().ApplyFrom(bytes.NewReader(bad))
		if (werr == nil) != (serr == nil) {
			t.Fatalf("byte %d: whole-file error %v, streamed error %v", i, werr, serr)
		}
	}
	for _, n := range []int{0, 50, sf.HeaderSize, sf.HeaderSize + 3, len(b) / 2, len(b) - 1} {
		_, err := NewImage().ApplyFrom(bytes.NewReader(b[:n]))
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Errorf("truncated to %d bytes: %v, want a *CorruptError", n, err)
		}
	}
}

// TestApplyFromGuardsLengthFields: a block page whose size field claims
// 256 MiB is refused before the codec allocates the buffer it names.
func TestApplyFromGuardsLengthFields(t *testing.T) {
	good, err := Encode(Header{PageSize: 512, Commit: 1, MinTXID: 1, MaxTXID: 1}, []page.Page{{Pgno: 1, Data: make([]byte, 512)}})
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	binary.BigEndian.PutUint32(bad[sf.HeaderSize+sf.PageHeaderSize:], 256<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = NewImage().ApplyFrom(bytes.NewReader(bad))
	runtime.ReadMemStats(&after)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CorruptError", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("refusing a hostile size field allocated %d bytes", grew)
	}
}

// TestEncodeToIsEncode: the streaming encoder writes Encode's bytes and
// reports the length and trailer of what it wrote.
func TestEncodeToIsEncode(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	var pages []page.Page
	for i := uint32(1); i <= 300; i++ {
		d := make([]byte, 1024)
		rnd.Read(d[:rnd.Intn(1024)])
		pages = append(pages, page.Page{Pgno: i, Data: d})
	}
	h := Header{PageSize: 1024, Commit: 300, MinTXID: 1, MaxTXID: 1, Timestamp: 7}
	want, err := Encode(h, pages)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	i := 0
	w, err := EncodeTo(&buf, h, func() (page.Page, bool, error) {
		if i == len(pages) {
			return page.Page{}, false, nil
		}
		i++
		return pages[i-1], true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("EncodeTo wrote other bytes than Encode")
	}
	f, _ := Decode(want)
	if w.Size != int64(len(want)) || w.FileChecksum != f.FileChecksum {
		t.Fatalf("EncodeTo reported %+v; the file has %d bytes, checksum %016x", w, len(want), f.FileChecksum)
	}
	if _, file, _ := Trailer(want); file != f.FileChecksum {
		t.Fatalf("Trailer gives %016x, want %016x", file, f.FileChecksum)
	}
}

// TestEncodeToSpillsTheIndexToTheSameBytes: a file with more pages than
// EncodeTo keeps index entries for in memory comes out byte for byte as
// the codec writes it with the whole index in memory.
func TestEncodeToSpillsTheIndexToTheSameBytes(t *testing.T) {
	n := uint32(spillAfter + 1000)
	h := Header{PageSize: 512, Commit: n, MinTXID: 1, MaxTXID: 1, Flags: HeaderFlagNoChecksum}
	buf := make([]byte, 512)
	var want bytes.Buffer
	enc, _ := sf.NewEncoder(&want)
	if err := enc.EncodeHeader(toSF(h)); err != nil {
		t.Fatal(err)
	}
	lock := LockPgno(512)
	for p := uint32(1); p <= n; p++ {
		if p == lock {
			continue
		}
		binary.BigEndian.PutUint32(buf, p)
		if err := enc.EncodePage(sf.PageHeader{Pgno: p}, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil || enc.Spilled() {
		t.Fatalf("reference encoder: %v, spilled %v", err, enc.Spilled())
	}
	var got bytes.Buffer
	p := uint32(0)
	if _, err := EncodeTo(&got, h, func() (page.Page, bool, error) {
		if p++; p == lock {
			p++
		}
		if p > n {
			return page.Page{}, false, nil
		}
		binary.BigEndian.PutUint32(buf, p)
		return page.Page{Pgno: p, Data: buf}, true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("a spilled index gives other bytes")
	}
}
