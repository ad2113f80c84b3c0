package ltx

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// The page set answers as a []bool would, across chunk boundaries, after
// truncation, and with a skipped (lock) page.
func TestPageSetAgreesWithASlice(t *testing.T) {
	const commit = 3*chunkPages + 77
	var s pageSet
	ref := make([]bool, commit+1)
	for pgno := uint32(1); pgno <= commit; pgno++ {
		if pgno%5 != 0 || pgno > 2*chunkPages {
			s.set(pgno)
			ref[pgno] = true
		}
	}
	firstMissing := func(commit, skip uint32) uint32 {
		for p := uint32(1); p <= commit; p++ {
			if !ref[p] && p != skip {
				return p
			}
		}
		return 0
	}
	for _, c := range []struct{ commit, skip uint32 }{{4, 0}, {5, 0}, {5, 5}, {commit, 0}, {commit, 5}, {2 * chunkPages, 0}} {
		if got, want := s.firstMissing(c.commit, c.skip), firstMissing(c.commit, c.skip); got != want {
			t.Fatalf("firstMissing(%d, %d) = %d, want %d", c.commit, c.skip, got, want)
		}
	}
	// Fill the gaps below 2 chunks: then nothing is missing up to commit.
	for pgno := uint32(5); pgno <= 2*chunkPages; pgno += 5 {
		s.set(pgno)
		ref[pgno] = true
	}
	if got := s.firstMissing(commit, 0); got != 0 {
		t.Fatalf("all set: firstMissing = %d", got)
	}
	s.truncate(chunkPages + 3)
	for _, p := range []uint32{1, chunkPages, chunkPages + 3} {
		if !s.has(p) {
			t.Fatalf("page %d dropped by truncate", p)
		}
	}
	for _, p := range []uint32{chunkPages + 4, 2 * chunkPages, commit} {
		if s.has(p) {
			t.Fatalf("page %d kept past truncate", p)
		}
	}
	if got := s.firstMissing(chunkPages+4, 0); got != chunkPages+4 {
		t.Fatalf("after truncate: firstMissing = %d, want %d", got, chunkPages+4)
	}
	if got := s.firstMissing(1<<32-1, 0); got != chunkPages+4 {
		t.Fatalf("a commit of four billion pages: firstMissing = %d", got)
	}
}

// A header claiming billions of pages allocates nothing for them before
// its file supplies the pages: the corrupt file is refused with a typed
// error, in memory and into a sink. (Before, the image sized itself from
// the header: this input made the test process run out of memory.)
func TestHeaderClaimsAllocateNothing(t *testing.T) {
	data := []byte("LTX1\x00\x00\x00\x02\x00\x00\x02\x000000\x00\x00\x00\x00\x00\x00\x00\x010\x00\x00\x00\x00\x00\x00\x01" + string(make([]byte, 68)))
	for _, sink := range []bool{false, true} {
		im := NewImage()
		if sink {
			im = NewImageTo(discard{})
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err1 := im.ApplyData(data)
		_, err2 := NewImageTo(discard{}).ApplyFrom(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		var ce *CorruptError
		if !errors.As(err1, &ce) || !errors.As(err2, &ce) {
			t.Fatalf("sink=%v: errors %v, %v; want *CorruptError", sink, err1, err2)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("sink=%v: refusing a corrupt header allocated %d bytes", sink, grew)
		}
	}
}

// truncate at every offset within a word and at word edges keeps exactly
// the pages up to commit, as clearing them one by one does.
func TestPageSetTruncateEveryOffset(t *testing.T) {
	for _, commit := range []uint32{1, 2, 63, 64, 65, 127, 128, 129, 1000, chunkPages - 1, chunkPages, chunkPages + 1, chunkPages + 64, 2*chunkPages - 1} {
		var s pageSet
		for p := uint32(1); p <= 2*chunkPages; p += 7 {
			s.set(p)
		}
		for p := uint32(1); p <= 130; p++ {
			s.set(p)
		}
		s.truncate(commit)
		for p := uint32(1); p <= 2*chunkPages; p++ {
			want := p <= commit && (p <= 130 || (p-1)%7 == 0)
			if s.has(p) != want {
				t.Fatalf("truncate(%d): has(%d) = %v, want %v", commit, p, s.has(p), want)
			}
		}
	}
}

func BenchmarkPageSetTruncate(b *testing.B) {
	var s pageSet
	for p := uint32(1); p <= 100; p++ {
		s.set(p)
	}
	for i := 0; i < b.N; i++ {
		s.truncate(100)
	}
}
