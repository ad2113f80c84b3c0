package ltx

import (
	"bytes"
	"errors"
	"testing"
	"testing/iotest"
)

// TestPageDecoderYieldsDecodedPages: one PageDecoder, reused across the
// files of a chain and reading one byte at a time, passes on exactly the
// pages Decode returns, in order, with the header; check can refuse a
// file before any page; a flipped byte fails with a *CorruptError.
func TestPageDecoderYieldsDecodedPages(t *testing.T) {
	pd := NewPageDecoder()
	for _, data := range blockChain(t, 300, 1024) {
		want, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint32
		h, err := pd.DecodeFrom(iotest.OneByteReader(bytes.NewReader(data)), nil, func(pgno uint32, page []byte) error {
			i := len(got)
			if i >= len(want.Pages) || want.Pages[i].Pgno != pgno || !bytes.Equal(want.Pages[i].Data, page) {
				t.Fatalf("page %d (#%d) differs from Decode's", pgno, i)
			}
			got = append(got, pgno)
			return nil
		})
		if err != nil || h != want.Header || len(got) != len(want.Pages) {
			t.Fatalf("DecodeFrom: %v, header equal %v, %d pages of %d", err, h == want.Header, len(got), len(want.Pages))
		}
		refused := errors.New("refused")
		pages := 0
		if _, err := pd.DecodeFrom(bytes.NewReader(data), func(Header) error { return refused }, func(uint32, []byte) error { pages++; return nil }); !errors.Is(err, refused) || pages != 0 {
			t.Fatalf("a refused header: %v, %d pages passed on", err, pages)
		}
		bad := bytes.Clone(data)
		bad[len(bad)/2] ^= 0x40
		var ce *CorruptError
		if _, err := pd.DecodeFrom(bytes.NewReader(bad), nil, func(uint32, []byte) error { return nil }); !errors.As(err, &ce) {
			t.Fatalf("a flipped byte: %v, want a *CorruptError", err)
		}
	}
}
