package ltx

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func goldenBundle(t testing.TB) ([]BundleEntry, []byte) {
	files := loadGolden(t)
	var entries []BundleEntry
	for i, b := range files[1:] {
		entries = append(entries, BundleEntry{Cell: "Counter:abc", CellEpoch: 3, TXID: TXID(i + 2), Data: b})
	}
	entries = append(entries, BundleEntry{Cell: "Room:z", CellEpoch: 1, TXID: 9}) // an empty payload
	data, err := EncodeBundle(entries)
	if err != nil {
		t.Fatal(err)
	}
	return entries, data
}

// Round trip: every payload and (cell, epoch, TXID) comes back verbatim, in
// order, and the golden L0 files inside still decode.
func TestBundleRoundTripIsByteIdentical(t *testing.T) {
	entries, data := goldenBundle(t)
	if !bytes.HasSuffix(data, []byte(BundleMagic)) {
		t.Fatalf("bundle does not end with %s", BundleMagic)
	}
	rows, err := DecodeBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(entries) {
		t.Fatalf("%d rows, want %d", len(rows), len(entries))
	}
	var off uint64
	for i, r := range rows {
		e := entries[i]
		if r.Cell != e.Cell || r.CellEpoch != e.CellEpoch || r.TXID != e.TXID || r.Offset != off {
			t.Errorf("row %d = %+v, want %s/%d/%d at %d", i, r, e.Cell, e.CellEpoch, e.TXID, off)
		}
		if !bytes.Equal(r.Payload(data), e.Data) {
			t.Errorf("row %d: payload differs", i)
		}
		if len(e.Data) > 0 {
			if _, err := Decode(r.Payload(data)); err != nil {
				t.Errorf("row %d: %v", i, err)
			}
		}
		off += r.Len
	}
}

func TestEmptyBundleIsEightBytes(t *testing.T) {
	data, err := EncodeBundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 0, 'C', 'L', 'B', '1'}; !bytes.Equal(data, want) {
		t.Fatalf("empty bundle = %x, want %x", data, want)
	}
	rows, err := DecodeBundle(data)
	if err != nil || len(rows) != 0 {
		t.Fatalf("decode empty: %v, %v", rows, err)
	}
}

// A footer row whose length runs past the object is refused.
func TestLyingFooterIsRefused(t *testing.T) {
	_, data := goldenBundle(t)
	rows, _ := DecodeBundle(data)
	lie := bytes.Clone(data)
	// The first row's len field: the footer starts after the payloads.
	footerStart := int(rows[len(rows)-1].Offset + rows[len(rows)-1].Len)
	lenAt := footerStart + 2 + len(rows[0].Cell) + 24
	lie[lenAt+7] = 0x7f
	_, err := DecodeBundle(lie)
	var be *BundleError
	if !errors.As(err, &be) || !errors.Is(err, ErrCorruptBundle) || !strings.Contains(err.Error(), "past the object") {
		t.Fatalf("lying footer: %v", err)
	}
}

func TestNotABundleIsRefused(t *testing.T) {
	for _, data := range [][]byte{nil, {}, []byte("CLB1"), []byte("hello world!"), {0xff, 0xff, 0xff, 0xff, 'C', 'L', 'B', '1'}} {
		if _, err := DecodeBundle(data); !errors.Is(err, ErrCorruptBundle) {
			t.Errorf("DecodeBundle(%q) = %v, want ErrCorruptBundle", data, err)
		}
	}
}

// Every proper prefix of a bundle is refused (celld's
// every_truncation_of_a_bundle_is_refused).
func TestEveryTruncationOfABundleIsRefused(t *testing.T) {
	_, data := goldenBundle(t)
	for n := 0; n < len(data); n++ {
		if rows, err := DecodeBundle(data[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded to %d rows", n, len(data), len(rows))
		}
	}
}

// A counterfeit trailer inside a payload only ever yields rows inside the
// object.
func TestEmbeddedCounterfeitTrailerStaysInBounds(t *testing.T) {
	payload := append(bytes.Repeat([]byte{0xab}, 64), 0xff, 0xff, 0, 0, 'C', 'L', 'B', '1')
	data, err := EncodeBundle([]BundleEntry{{Cell: "c", CellEpoch: 1, TXID: 2, Data: payload}})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= len(data); n++ {
		rows, err := DecodeBundle(data[:n])
		if err != nil {
			continue
		}
		for _, r := range rows {
			if r.Offset+r.Len > uint64(n) {
				t.Fatalf("prefix %d: row %+v out of bounds", n, r)
			}
		}
	}
}

func TestRandomBundlesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		var entries []BundleEntry
		for j := rng.IntN(6); j > 0; j-- {
			cell := make([]byte, rng.IntN(300))
			for k := range cell {
				cell[k] = byte(rng.IntN(256))
			}
			d := make([]byte, rng.IntN(200))
			for k := range d {
				d[k] = byte(rng.IntN(256))
			}
			entries = append(entries, BundleEntry{Cell: string(cell), CellEpoch: rng.Uint64(), TXID: TXID(rng.Uint64()), Data: d})
		}
		data, err := EncodeBundle(entries)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := DecodeBundle(data)
		if err != nil || len(rows) != len(entries) {
			t.Fatalf("round %d: %d rows, %v", i, len(rows), err)
		}
		for j, r := range rows {
			e := entries[j]
			if r.Cell != e.Cell || r.CellEpoch != e.CellEpoch || r.TXID != e.TXID || !bytes.Equal(r.Payload(data), e.Data) {
				t.Fatalf("round %d row %d differs", i, j)
			}
		}
	}
}

func TestOverlongCellNameIsRefused(t *testing.T) {
	_, err := EncodeBundle([]BundleEntry{{Cell: strings.Repeat("x", 1<<16)}})
	if !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("EncodeBundle: %v", err)
	}
}

// FuzzDecodeBundle: any input decodes to rows inside it, or to a
// *BundleError; it never panics.
func FuzzDecodeBundle(f *testing.F) {
	_, data := goldenBundle(f)
	f.Add(data)
	f.Add([]byte{0, 0, 0, 0, 'C', 'L', 'B', '1'})
	f.Add([]byte("CLB1CLB1CLB1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := DecodeBundle(b)
		if err != nil {
			var be *BundleError
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a *BundleError", err)
			}
			return
		}
		for _, r := range rows {
			if r.Offset+r.Len > uint64(len(b)) || r.Offset+r.Len < r.Offset {
				t.Fatalf("row %+v outside %d bytes", r, len(b))
			}
			_ = r.Payload(b)
		}
	})
}
