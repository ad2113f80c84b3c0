package ltx

import (
	"bytes"
	"errors"
	"testing"
)

// Merging the golden files 2..6 and laying the merge over the snapshot
// gives the image the six files give one by one.
func TestMergeFilesMatchesApplyingEachFile(t *testing.T) {
	files := loadGolden(t)
	merged, h, err := MergeFiles(files[1:])
	if err != nil {
		t.Fatal(err)
	}
	if h.MinTXID != 2 || h.MaxTXID != 6 || h.Flags != 0 && h.Flags != HeaderFlagNoChecksum {
		t.Fatalf("merged header %+v", h)
	}
	if err := Verify(merged); err != nil {
		t.Fatal(err)
	}
	one := NewImage()
	for _, b := range files {
		if _, err := one.ApplyData(b); err != nil {
			t.Fatal(err)
		}
	}
	two := NewImage()
	for _, b := range [][]byte{files[0], merged} {
		if _, err := two.ApplyData(b); err != nil {
			t.Fatal(err)
		}
	}
	a, err := one.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	b, err := two.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) || two.TXID() != 6 {
		t.Fatalf("merged chain differs from the files applied one by one (TXID %d)", two.TXID())
	}
	// The whole chain from TXID 1 merges into a snapshot.
	all, h, err := MergeFiles(files)
	if err != nil || h.MinTXID != 1 || h.MaxTXID != 6 {
		t.Fatalf("merge from TXID 1: %+v, %v", h, err)
	}
	three := NewImage()
	if _, err := three.ApplyData(all); err != nil {
		t.Fatal(err)
	}
	c, _ := three.Bytes()
	if !bytes.Equal(a, c) {
		t.Fatal("merged snapshot differs")
	}
}

func TestMergeFilesRefusesGapsAndBadInput(t *testing.T) {
	files := loadGolden(t)
	if _, _, err := MergeFiles([][]byte{files[1], files[3]}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("gap: %v", err)
	}
	if _, _, err := MergeFiles([][]byte{files[2], files[1]}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("out of order: %v", err)
	}
	if _, _, err := MergeFiles(nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("nothing: %v", err)
	}
	bad := bytes.Clone(files[2])
	bad[len(bad)/2] ^= 0xff
	if _, _, err := MergeFiles([][]byte{files[1], bad}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt input: %v", err)
	}
}
