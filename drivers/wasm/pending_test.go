package wasm

import (
	"bytes"
	"testing"
)

func TestPendingStore(t *testing.T) {
	var s pendingStore
	page := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

	s.begin(512, 3)
	s.page(1, page(1, 512))
	copy(s.room(3), page(3, 512))
	s.begin(1024, 1)
	s.page(1, page(9, 1024))
	s.begin(512, 9)
	s.page(7, page(7, 512))
	s.drop() // a failed capture leaves no trace

	got := s.take()
	if len(got) != 2 {
		t.Fatalf("%d commits, want 2", len(got))
	}
	if c := got[0]; c.PageSize != 512 || c.PageCount != 3 || len(c.Pages) != 2 ||
		c.Pages[0].Pgno != 1 || !bytes.Equal(c.Pages[0].Data, page(1, 512)) ||
		c.Pages[1].Pgno != 3 || !bytes.Equal(c.Pages[1].Data, page(3, 512)) {
		t.Fatalf("first commit %+v", c)
	}
	if c := got[1]; c.PageSize != 1024 || c.PageCount != 1 || len(c.Pages) != 1 || !bytes.Equal(c.Pages[0].Data, page(9, 1024)) {
		t.Fatalf("second commit %+v", c)
	}
	// Taken pages are the caller's: reusing the store does not touch them.
	s.begin(512, 1)
	s.page(1, page(0xEE, 512))
	if !bytes.Equal(got[0].Pages[0].Data, page(1, 512)) {
		t.Fatal("a taken page changed when the store was reused")
	}
	// A page's slice cannot grow into its neighbour.
	if cap(got[0].Pages[0].Data) != 512 {
		t.Fatalf("page capacity %d", cap(got[0].Pages[0].Data))
	}
	if again := s.take(); len(again) != 1 || s.take() != nil {
		t.Fatal("take does not empty the store")
	}
}
