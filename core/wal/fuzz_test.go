package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/page"
)

// seedWALs are small synthetic logs covering both byte orders, repeated
// pages, a shrink, an unfinished transaction and leftover frames of an
// older generation.
func seedWALs() [][]byte {
	a := newWAL(512, false, 1, 2)
	a.frame(1, 0, a.page(1)).frame(2, 2, a.page(2)).frame(2, 0, a.page(3)).frame(2, 2, a.page(4)).frame(3, 0, a.page(5))
	b := newWAL(512, true, 9, 8)
	b.frame(4, 0, b.page(1)).frame(1, 2, b.page(2)).frameWith(2, 2, b.page(3), 9, 8, true)
	c := newWAL(1024, false, 5, 5)
	for i := range 4 {
		c.frame(uint32(i+1), uint32(i+1), c.page(byte(i)))
	}
	c.restart(6)
	c.frame(1, 2, c.page(9))
	return [][]byte{a.bytes(), b.bytes(), c.bytes(), a.bytes()[:HeaderSize], nil}
}

func addVectorSeeds(f *testing.F, add func(b []byte)) {
	dir := os.Getenv("CELLB_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "testdata")
	}
	for _, rel := range []string{"sample.wal", "wal-reader/ok/wal", "wal-reader/frame-checksum-mismatch/wal", "wal-reader/salt-mismatch/wal", "wal-reader/frame-salts/wal"} {
		if b, err := os.ReadFile(filepath.Join(dir, "celld-ltx-golden", rel)); err == nil {
			add(b)
		}
	}
}

// FuzzReadCommits checks that no input panics or yields malformed commits,
// and that reading a log in two steps equals reading it at once.
func FuzzReadCommits(f *testing.F) {
	for _, s := range seedWALs() {
		f.Add(s, uint16(len(s)/2))
	}
	addVectorSeeds(f, func(b []byte) { f.Add(b, uint16(len(b)/3)) })
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole, err := ReadCommits(bytes.NewReader(data), Position{})
		if err != nil {
			if !errors.Is(err, ErrInvalidHeader) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		checkBatch(t, whole, len(data))
		// The incremental reads use a pool, so the fuzzer also checks that
		// pooled pages equal shared ones.
		r := Reader{Pages: new(page.Pool)}
		first, err := r.ReadCommits(prefixReader{data, int(cut)}, Position{})
		if err != nil {
			if int(cut) >= HeaderSize {
				t.Fatalf("prefix read failed: %v", err)
			}
			return
		}
		rest, err := r.ReadCommits(bytes.NewReader(data), first.Next)
		if err != nil {
			t.Fatalf("resumed read failed: %v", err)
		}
		if rest.Reset {
			t.Fatal("resuming on the same file reported a reset")
		}
		if first.Header.PageSize > 0 {
			from, err := r.ReadCommitsFrom(bytes.NewReader(data), first.Next, first.Header)
			if err != nil {
				t.Fatalf("ReadCommitsFrom: %v", err)
			}
			if fmt.Sprint(from.Commits) != fmt.Sprint(rest.Commits) || from.Next != rest.Next {
				t.Fatal("ReadCommitsFrom differs from ReadCommits on an unrestarted log")
			}
		}
		got := fmt.Sprint(append(first.Commits, rest.Commits...))
		if got != fmt.Sprint(whole.Commits) || rest.Next != whole.Next {
			t.Fatalf("two-step read differs from a whole read")
		}
	})
}

func checkBatch(t *testing.T, b Batch, size int) {
	t.Helper()
	if b.Header.PageSize == 0 {
		if len(b.Commits) != 0 {
			t.Fatal("commits without a header")
		}
		return
	}
	fs := b.Header.FrameSize()
	if b.Next.Offset < HeaderSize || (b.Next.Offset-HeaderSize)%fs != 0 || b.Next.Offset > int64(size) {
		t.Fatalf("next offset %d", b.Next.Offset)
	}
	end := int64(HeaderSize)
	for _, c := range b.Commits {
		if c.DBSize == 0 || c.Offset != end || c.Size != int64(c.Frames)*fs || len(c.Pages) > c.Frames {
			t.Fatalf("commit %+v", c)
		}
		end += c.Size
		for i, p := range c.Pages {
			if p.Pgno == 0 || p.Pgno > c.DBSize || len(p.Data) != b.Header.PageSize || (i > 0 && c.Pages[i-1].Pgno >= p.Pgno) {
				t.Fatalf("page %d of commit at %d is malformed", p.Pgno, c.Offset)
			}
		}
	}
	if len(b.Commits) > 0 && end != b.Next.Offset {
		t.Fatalf("commits end at %d, next is %d", end, b.Next.Offset)
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range seedWALs() {
		f.Add(s)
	}
	addVectorSeeds(f, func(b []byte) { f.Add(b[:min(len(b), HeaderSize)]) })
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidHeader) {
				t.Fatalf("error does not wrap ErrInvalidHeader: %v", err)
			}
			return
		}
		if h.PageSize < MinPageSize || h.PageSize > MaxPageSize || h.PageSize&(h.PageSize-1) != 0 {
			t.Fatalf("accepted page size %d", h.PageSize)
		}
		if c1, c2 := Checksum(h.BigEndianChecksum(), 0, 0, data[:24]); c1 != h.Checksum1 || c2 != h.Checksum2 {
			t.Fatal("accepted a bad checksum")
		}
	})
}
