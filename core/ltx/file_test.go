package ltx

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cellb/cellb/core/page"
)

func isCorrupt(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce) && errors.Is(err, ErrCorrupt)
}

func randPages(r *rand.Rand, pgnos []uint32, size int) []page.Page {
	var out []page.Page
	for _, p := range pgnos {
		d := make([]byte, size)
		for i := range d {
			if r.IntN(4) == 0 {
				d[i] = byte(r.Uint32())
			}
		}
		out = append(out, page.Page{Pgno: p, Data: d})
	}
	return out
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	snap := randPages(r, []uint32{1, 2, 3, 4}, 4096)
	b, err := Encode(Header{PageSize: 4096, Commit: 4, MinTXID: 1, MaxTXID: 1, Timestamp: 1780109201091}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(b); err != nil {
		t.Fatalf("codec rejects our file: %v", err)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Flags != HeaderFlagNoChecksum || f.Header.Timestamp != 1780109201091 {
		t.Errorf("header %+v", f.Header)
	}
	for i, p := range f.Pages {
		if p.Pgno != snap[i].Pgno || !bytes.Equal(p.Data, snap[i].Data) {
			t.Fatalf("page %d differs", i)
		}
	}
	delta := randPages(r, []uint32{2, 6}, 4096)
	b2, err := Encode(Header{PageSize: 4096, Commit: 6, MinTXID: 2, MaxTXID: 3, Timestamp: 1780109201999}, delta)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := Decode(b2)
	if err != nil {
		t.Fatal(err)
	}
	im := NewImage()
	if err := im.Apply(f); err != nil {
		t.Fatal(err)
	}
	if err := im.Apply(f2); err != nil {
		t.Fatal(err)
	}
	if _, err := im.Bytes(); err == nil {
		t.Fatal("page 5 was never written, yet the image was accepted")
	}
}

func TestEncodeRejectsBadInput(t *testing.T) {
	p := func(n uint32) page.Page { return page.Page{Pgno: n, Data: make([]byte, 512)} }
	cases := map[string]struct {
		h     Header
		pages []page.Page
	}{
		"out of order":      {Header{PageSize: 512, Commit: 3, MinTXID: 2, MaxTXID: 2}, []page.Page{p(2), p(1)}},
		"beyond commit":     {Header{PageSize: 512, Commit: 1, MinTXID: 2, MaxTXID: 2}, []page.Page{p(2)}},
		"snapshot missing":  {Header{PageSize: 512, Commit: 3, MinTXID: 1, MaxTXID: 1}, []page.Page{p(1), p(3)}},
		"snapshot short":    {Header{PageSize: 512, Commit: 3, MinTXID: 1, MaxTXID: 1}, []page.Page{p(1), p(2)}},
		"wrong page length": {Header{PageSize: 1024, Commit: 1, MinTXID: 1, MaxTXID: 1}, []page.Page{p(1)}},
		"zero txid":         {Header{PageSize: 512, Commit: 1, MinTXID: 0, MaxTXID: 1}, []page.Page{p(1)}},
	}
	for name, c := range cases {
		if _, err := Encode(c.h, c.pages); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestEpochMarkerIs131Bytes(t *testing.T) {
	b, err := Encode(Header{PageSize: 4096, Commit: 9, MinTXID: 41, MaxTXID: 41, WALOffset: 32, WALSalt1: 1, WALSalt2: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 131 {
		t.Fatalf("zero-page marker is %d bytes, celld's is 131", len(b))
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Pages) != 0 || f.Header.Commit != 9 {
		t.Fatalf("marker decoded as %+v", f)
	}
}

func TestKeys(t *testing.T) {
	k := Key("Counter:abc", 7, 1, 3, 0x1f)
	want := "cells/Counter:abc/ltx/e7/0001/0000000000000003-000000000000001f.ltx"
	if k != want {
		t.Fatalf("Key = %q, want %q", k, want)
	}
	info, ok := ParseKey(k)
	if !ok || info.Cell != "Counter:abc" || info.Epoch != 7 || info.Level != 1 || info.MinTXID != 3 || info.MaxTXID != 0x1f {
		t.Fatalf("ParseKey = %+v, %v", info, ok)
	}
	for _, bad := range []string{
		"cells/C:a/ltx/e7/0001/0000000000000003-000000000000001f.tmp",
		"cells/C:a/ltx/e07/0001/0000000000000003-000000000000001f.ltx",
		"cells/C:a/ltx/e7/000a/0000000000000003-000000000000001f.ltx",
		"cells/C:a/ltx/e7/1/0000000000000003-000000000000001f.ltx",
		"cells/C:a/ltx/e7/0000/0000000000000004-0000000000000003.ltx",
		"cells/C:a/ltx/e7/0000/0000000000000000-0000000000000003.ltx",
		"cells/C:a/ltx/retired.json",
		"cells/C:a/own.json",
	} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	if got := FormatTimestamp(1780109201091); got != "2026-05-30T02:46:41.091Z" {
		t.Errorf("FormatTimestamp = %q", got)
	}
	if got := FormatTimestamp(1780109201000); got != "2026-05-30T02:46:41Z" {
		t.Errorf("FormatTimestamp = %q", got)
	}
}
