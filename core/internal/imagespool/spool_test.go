package imagespool

import (
	"bytes"
	"io"
	"testing"
)

// A spool reads back what was written, laid over and cut, in memory and
// once it moved to a file.
func TestSpoolInMemoryAndInAFile(t *testing.T) {
	for _, size := range []int{4096, 3 * InMemory} {
		want := bytes.Repeat([]byte{1, 2, 3, 4}, size/4)
		s, err := Of(t.TempDir(), want[:size/2])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(want[size/2:]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteAt([]byte{9, 9}, int64(size-2)); err != nil {
			t.Fatal(err)
		}
		copy(want[size-2:], []byte{9, 9})
		want = append(want, 7)
		if _, err := s.WriteAt([]byte{7}, int64(size)); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s.Reader())
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: read %d bytes (%v), want %d", size, len(got), err, len(want))
		}
		if err := s.Truncate(int64(size / 4)); err != nil {
			t.Fatal(err)
		}
		if err := s.Truncate(int64(size / 2)); err != nil {
			t.Fatal(err)
		}
		got, _ = io.ReadAll(s.Reader())
		clear(want[size/4 : size/2])
		if !bytes.Equal(got, want[:size/2]) {
			t.Fatalf("%d bytes: a cut and regrown spool reads back other bytes", size)
		}
		s.Close()
		if _, err := s.ReadAt(make([]byte, 1), 0); err != ErrClosed {
			t.Fatalf("read after Close: %v", err)
		}
	}
}
