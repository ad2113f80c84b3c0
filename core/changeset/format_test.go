package changeset

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func sampleFile() *File {
	return &File{
		Cell: "Room:abc", Epoch: 4, MinSeq: 7, MaxSeq: 10, Timestamp: 1_700_000_000_123,
		Records: []Record{
			{Seq: 7, Kind: KindImage, Data: []byte("SQLite format 3\x00 image")},
			{Seq: 9, Kind: KindChangeset, Data: []byte{0x54, 1, 2, 3}},
			{Seq: 10, Kind: KindChangeset, Data: []byte{}},
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	want := sampleFile()
	data, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if !got.Snapshot() {
		t.Fatal("a file starting with an image is a snapshot")
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	data, _ := Encode(sampleFile())
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for n := 0; n < len(data); n++ {
		if _, err := Decode(data[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

func TestEncodeRejectsInvalidFiles(t *testing.T) {
	for name, mut := range map[string]func(*File){
		"no cell":           func(f *File) { f.Cell = "" },
		"empty range":       func(f *File) { f.MaxSeq = 6 },
		"zero seq":          func(f *File) { f.MinSeq = 0 },
		"record outside":    func(f *File) { f.Records[2].Seq = 11 },
		"records unordered": func(f *File) { f.Records[1].Seq = 10 },
		"image not first":   func(f *File) { f.Records[1].Kind = KindImage },
		"unknown kind":      func(f *File) { f.Records[2].Kind = 9 },
	} {
		f := sampleFile()
		mut(f)
		if _, err := Encode(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, snap := range []bool{false, true} {
		k := Key("C:1", 3, 5, 9, snap)
		fi, ok := ParseKey("C:1", 3, k)
		if !ok || fi.MinSeq != 5 || fi.MaxSeq != 9 || fi.Snapshot != snap {
			t.Fatalf("%s parsed as %+v %v", k, fi, ok)
		}
	}
	for _, k := range []string{
		EpochPrefix("C:1", 3) + "0000000000000005-0000000000000004.cset",
		EpochPrefix("C:1", 3) + "0000000000000000-0000000000000004.cset",
		EpochPrefix("C:1", 3) + "0000000000000005-0000000000000009.ltx",
		EpochPrefix("C:1", 3) + "000000000000000A-0000000000000009.cset",
		EpochPrefix("C:1", 4) + "0000000000000001-0000000000000009.cset",
	} {
		if _, ok := ParseKey("C:1", 3, k); ok {
			t.Errorf("%s parsed", k)
		}
	}
}

func FuzzDecode(f *testing.F) {
	data, _ := Encode(sampleFile())
	f.Add(data)
	empty, _ := Encode(&File{Cell: "x", MinSeq: 1, MaxSeq: 1})
	f.Add(empty)
	f.Add([]byte("CBCS"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		again, err := Encode(file)
		if err != nil {
			t.Fatalf("a decoded file does not encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decode then encode changed the bytes")
		}
	})
}

func FuzzParseKey(f *testing.F) {
	f.Add(Key("C:1", 3, 5, 9, true))
	f.Add(Key("C:1", 3, 1, 1, false))
	f.Add(EpochPrefix("C:1", 3) + "x-y.cset")
	f.Fuzz(func(t *testing.T, key string) {
		fi, ok := ParseKey("C:1", 3, key)
		if ok && Key("C:1", 3, fi.MinSeq, fi.MaxSeq, fi.Snapshot) != key {
			t.Fatalf("%q parsed as %+v", key, fi)
		}
	})
}
