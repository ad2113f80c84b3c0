package ltx

import (
	"bytes"
	"testing"

	"github.com/cellb/cellb/core/page"
)

// TestSnapshotPageOneCarriesWALFormat: a snapshot encoded from a
// rollback-journal database (bytes 18/19 = 1/1, as the wasm driver's files
// hold them) decodes on the golden files' rules: page 1 carries 2/2 as in
// celld's snapshot, every page equals the golden snapshot's, the file
// verifies (its checksum covers the bytes uploaded), and the image restored
// from it is the golden image. The caller's page is not modified.
func TestSnapshotPageOneCarriesWALFormat(t *testing.T) {
	golden0, err := Decode(loadGolden(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	if p1 := golden0.Pages[0].Data; p1[18] != 2 || p1[19] != 2 {
		t.Fatalf("golden snapshot's page 1 has bytes 18/19 = %d/%d", p1[18], p1[19])
	}
	local := make([]page.Page, len(golden0.Pages))
	for i, p := range golden0.Pages {
		local[i] = page.Page{Pgno: p.Pgno, Data: append([]byte(nil), p.Data...)}
	}
	local[0].Data[18], local[0].Data[19] = 1, 1 // the local database is in rollback-journal mode

	data, err := Encode(golden0.Header, local)
	if err != nil {
		t.Fatal(err)
	}
	if local[0].Data[18] != 1 || local[0].Data[19] != 1 {
		t.Fatal("Encode modified the caller's page 1")
	}
	if err := Verify(data); err != nil {
		t.Fatalf("the uploaded file does not verify: %v", err)
	}
	f, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if p1 := f.Pages[0].Data; p1[18] != 2 || p1[19] != 2 {
		t.Fatalf("uploaded snapshot's page 1 has bytes 18/19 = %d/%d, want 2/2 as celld writes", p1[18], p1[19])
	}
	for i := range f.Pages {
		if !bytes.Equal(f.Pages[i].Data, golden0.Pages[i].Data) {
			t.Errorf("page %d differs from the golden snapshot's", f.Pages[i].Pgno)
		}
	}
	want, got := NewImage(), NewImage()
	if err := want.Apply(golden0); err != nil {
		t.Fatal(err)
	}
	if _, err := got.ApplyData(data); err != nil {
		t.Fatal(err)
	}
	wb, _ := want.Bytes()
	gb, _ := got.Bytes()
	if !bytes.Equal(wb, gb) {
		t.Error("the image restored from the uploaded snapshot differs from the golden snapshot's")
	}
}

func TestWALHeaderPageLeavesOtherPages(t *testing.T) {
	page := make([]byte, 512)
	copy(page, sqliteHeaderString)
	page[18], page[19] = 1, 1
	if got := WALHeaderPage(2, page); &got[0] != &page[0] {
		t.Error("page 2 was copied")
	}
	other := bytes.Repeat([]byte{1}, 512) // not a SQLite header
	if got := WALHeaderPage(1, other); !bytes.Equal(got, other) {
		t.Error("a page 1 without the header string was changed")
	}
	odd := append([]byte(nil), page...)
	odd[18] = 7 // a version SQLite does not define
	if got := WALHeaderPage(1, odd); got[18] != 7 || got[19] != 1 {
		t.Error("an undefined format version was rewritten")
	}
	mixed := append([]byte(nil), page...)
	mixed[18] = 2
	if got := WALHeaderPage(1, mixed); got[18] != 2 || got[19] != 2 {
		t.Errorf("bytes 2/1 became %d/%d", got[18], got[19])
	}
}
