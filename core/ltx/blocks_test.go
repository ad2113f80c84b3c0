package ltx

import (
	"bytes"
	"errors"
	"hash/crc64"
	"math/rand"
	"runtime"
	"testing"
	"testing/iotest"

	sf "github.com/superfly/ltx"

	"github.com/cellb/cellb/core/page"
)

// blockChain encodes, in the block page layout Encode writes, a snapshot
// of n pages of size ps (half random, half repetitive) and a delta over
// every third page.
func blockChain(t testing.TB, n int, ps uint32) [][]byte {
	t.Helper()
	rnd := rand.New(rand.NewSource(7))
	mk := func(pgno uint32) page.Page {
		d := make([]byte, ps)
		if pgno%2 == 0 {
			rnd.Read(d)
		} else {
			for i := range d {
				d[i] = byte(pgno) + byte(i/64)
			}
		}
		return page.Page{Pgno: pgno, Data: d}
	}
	var snap, delta []page.Page
	for p := uint32(1); p <= uint32(n); p++ {
		snap = append(snap, mk(p))
		if p%3 == 0 {
			delta = append(delta, mk(p))
		}
	}
	a, err := Encode(Header{PageSize: ps, Commit: uint32(n), MinTXID: 1, MaxTXID: 1}, snap)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(Header{PageSize: ps, Commit: uint32(n), MinTXID: 2, MaxTXID: 2}, delta)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{a, b}
}

// TestApplyFromBlockLayout: files in the block page layout, read one byte
// at a time, rebuild the whole-file path's image byte for byte, with page
// sizes that make one partial chunk of pages or many (see chunkBytes).
func TestApplyFromBlockLayout(t *testing.T) {
	for _, c := range []struct {
		pages int
		ps    uint32
	}{{40, 1024}, {600, 512}, {11, 65536}} {
		applyBlockChain(t, blockChain(t, c.pages, c.ps))
	}
}

func applyBlockChain(t *testing.T, files [][]byte) {
	whole, stream := NewImage(), NewImage()
	for i, b := range files {
		if b[sf.HeaderSize+5]&byte(sf.PageHeaderFlagSize) == 0 {
			t.Fatalf("file %d is not in the block layout", i)
		}
		if _, err := whole.ApplyData(b); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.ApplyFrom(iotest.OneByteReader(bytes.NewReader(b))); err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
	}
	a, _ := whole.Bytes()
	b, err := stream.Bytes()
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("streamed image differs from the whole-file one (err %v)", err)
	}
}

// TestApplyFromBlockLayoutRefusesCorruption: every single-byte change of a
// block-layout file (snapshot and delta) that the codec refuses, the
// streaming decoder refuses too, with a typed error, and it accepts the
// changes the codec accepts; truncations are typed errors.
func TestApplyFromBlockLayoutRefusesCorruption(t *testing.T) {
	files := blockChain(t, 6, 512)
	onto := func() *Image { // an image holding the snapshot, for the delta
		im := NewImage()
		if _, err := im.ApplyData(files[0]); err != nil {
			t.Fatal(err)
		}
		return im
	}
	for fi, b := range files {
		fresh := NewImage
		if fi == 1 {
			fresh = onto
		}
		for i := sf.HeaderSize; i < len(b); i++ {
			bad := bytes.Clone(b)
			bad[i] ^= 0x5a
			_, werr := fresh().ApplyData(bad)
			_, serr := fresh().ApplyFrom(bytes.NewReader(bad))
			if (werr == nil) != (serr == nil) {
				t.Fatalf("file %d, byte %d: whole-file error %v, streamed error %v", fi, i, werr, serr)
			}
			var ce *CorruptError
			if serr != nil && !errors.As(serr, &ce) {
				t.Fatalf("file %d, byte %d: untyped error %v", fi, i, serr)
			}
		}
		for _, n := range []int{0, 50, sf.HeaderSize, sf.HeaderSize + 3, sf.HeaderSize + 8, len(b) / 2, len(b) - 17, len(b) - 1} {
			_, err := fresh().ApplyFrom(bytes.NewReader(b[:n]))
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Errorf("file %d truncated to %d bytes: %v, want a *CorruptError", fi, n, err)
			}
		}
		_, err := fresh().ApplyFrom(bytes.NewReader(append(bytes.Clone(b), 0)))
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Errorf("file %d with a byte after its trailer: %v, want a *CorruptError", fi, err)
		}
	}
}

// discard is a Sink that keeps nothing.
type discard struct{}

func (discard) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discard) Truncate(int64) error                   { return nil }

// TestApplyFromAllocatesNoPerPageBuffers: streaming a chain into a sink
// allocates a fixed set of buffers, not the files' size again in garbage
// (the codec's Decoder allocates each page's compressed bytes anew; that
// garbage set a restore's peak memory). Not timed.
func TestApplyFromAllocatesNoPerPageBuffers(t *testing.T) {
	files := blockChain(t, 2048, 4096) // an 8 MiB snapshot and its delta
	var size int
	for _, b := range files {
		size += len(b)
	}
	im := NewImageTo(discard{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, b := range files {
		if _, err := im.ApplyFrom(bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("applying %d bytes of LTX allocated %d bytes, want at most 1 MiB", size, grew)
	}
}

// TestZeroShiftIsUpdateWithZeros: the table lookup appends a page of zero
// bytes to a CRC-64 exactly as hashing them does.
func TestZeroShiftIsUpdateWithZeros(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	for _, n := range []int{1, 10, 512, 4096, 65536} {
		z, zeros := newZeroShift(n), make([]byte, n)
		for range 50 {
			c := rnd.Uint64()
			if got, want := z.apply(c), crc64.Update(c, crcISO, zeros); got != want {
				t.Fatalf("%d zeros after %016x: %016x, want %016x", n, c, got, want)
			}
		}
	}
}

// TestApplyFromChecksummedSnapshot: a snapshot that tracks checksums (as
// litestream writes them) is accepted with its post-apply checksum and
// refused, as by the codec, with a wrong one.
func TestApplyFromChecksummedSnapshot(t *testing.T) {
	const ps, n = 1024, 70
	encode := func(wrong bool) []byte {
		var buf bytes.Buffer
		enc, err := sf.NewEncoder(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.EncodeHeader(sf.Header{Version: sf.Version, PageSize: ps, Commit: n, MinTXID: 1, MaxTXID: 1, Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
		sum := sf.ChecksumFlag
		for p := uint32(1); p <= n; p++ {
			d := bytes.Repeat([]byte{byte(p)}, ps)
			if err := enc.EncodePage(sf.PageHeader{Pgno: p}, d); err != nil {
				t.Fatal(err)
			}
			sum = sf.ChecksumFlag | (sum ^ sf.ChecksumPage(p, d))
		}
		if wrong {
			sum ^= 2
		}
		enc.SetPostApplyChecksum(sum)
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	good, bad := encode(false), encode(true)
	if good[sf.HeaderSize+5]&byte(sf.PageHeaderFlagSize) == 0 {
		t.Fatal("not in the block layout")
	}
	if _, err := NewImage().ApplyData(good); err != nil {
		t.Fatalf("whole-file: %v", err)
	}
	if _, err := NewImage().ApplyFrom(bytes.NewReader(good)); err != nil {
		t.Fatalf("streamed: %v", err)
	}
	_, werr := NewImage().ApplyData(bad)
	_, serr := NewImage().ApplyFrom(bytes.NewReader(bad))
	var ce *CorruptError
	if werr == nil || !errors.As(serr, &ce) {
		t.Fatalf("wrong post-apply checksum: whole-file %v, streamed %v", werr, serr)
	}
}
