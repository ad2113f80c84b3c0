package ltx

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/page"
)

// FuzzDecode: any input decodes to a consistent file or gives a typed
// error; it never panics, and a decoded file re-encodes to one that decodes
// to the same content.
func FuzzDecode(f *testing.F) {
	seed, _ := Encode(Header{PageSize: 512, Commit: 2, MinTXID: 1, MaxTXID: 1, Timestamp: 5},
		[]page.Page{{Pgno: 1, Data: make([]byte, 512)}, {Pgno: 2, Data: make([]byte, 512)}})
	f.Add(seed)
	marker, _ := Encode(Header{PageSize: 4096, Commit: 3, MinTXID: 9, MaxTXID: 9, WALOffset: 32}, nil)
	f.Add(marker)
	f.Add([]byte("LTX1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		checkStreamAgrees(t, data, err)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		again, err := Encode(file.Header, file.Pages)
		if err != nil {
			t.Fatalf("decoded file does not re-encode: %v", err)
		}
		back, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded file does not decode: %v", err)
		}
		if !sameContent(back, file) {
			t.Fatal("re-encoded file decodes differently")
		}
	})
}

// FuzzPlan: any set of file ranges plans to a contiguous chain or a typed
// error, never a panic.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{1, 1, 0, 2, 2, 0, 3, 5, 1})
	f.Add([]byte{2, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var files []FileInfo
		for len(data) >= 3 {
			files = append(files, FileInfo{MinTXID: TXID(data[0]), MaxTXID: TXID(data[1]), Level: int(data[2] % 11), Epoch: uint64(data[2] / 11)})
			data = data[3:]
		}
		checkPlanProperties(t, 0, validOnly(files))
		if chain, err := PlanEpochs(files); err == nil {
			if _, err := Plan(chain); err != nil {
				var ge *GapError
				if !errors.As(err, &ge) && !errors.Is(err, ErrTxNotAvailable) {
					t.Fatalf("untyped: %v", err)
				}
			}
		}
	})
}

func validOnly(files []FileInfo) []FileInfo {
	var out []FileInfo
	for _, f := range files {
		if f.MinTXID >= 1 && f.MinTXID <= f.MaxTXID && f.Level <= MaxLevel {
			out = append(out, f)
		}
	}
	return out
}

// checkStreamAgrees: the streaming decoder accepts exactly the snapshots
// the whole-file one accepts, and refuses the rest with a typed error.
func checkStreamAgrees(t *testing.T, data []byte, wholeErr error) {
	h, herr := DecodeHeader(data)
	if herr != nil || !h.IsSnapshot() || h.Commit > 1<<12 {
		return // refused before any page either way, or too large to size here
	}
	_, err := NewImage().ApplyFrom(bytes.NewReader(data))
	if (err == nil) != (wholeErr == nil) {
		t.Fatalf("whole-file decode: %v; streamed: %v", wholeErr, err)
	}
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("streamed decode: untyped error %v", err)
	}
}

// FuzzApplyFrom: the streaming decoder (the project's own for the block
// layout, the codec's for the frame layout) accepts exactly what the
// whole-file path accepts, onto the same image, writing the same pages;
// its errors are typed; it never panics, and a header's claims (a Commit of
// billions of pages) allocate nothing before the file supplies its pages.
// The images go to a sparse in-memory sink, so a page claiming a far
// offset costs a map entry, not the offset in zeros.
func FuzzApplyFrom(f *testing.F) {
	chain := blockChain(f, 6, 512)
	for _, b := range chain {
		f.Add(b, false)
	}
	f.Add(chain[1], true)
	f.Add([]byte("LTX1"), false)
	f.Fuzz(func(t *testing.T, data []byte, ontoSnapshot bool) {
		fresh := func() (*Image, *sparseSink) {
			sink := &sparseSink{pages: map[int64][]byte{}}
			im := NewImageTo(sink)
			if ontoSnapshot {
				if _, err := im.ApplyData(chain[0]); err != nil {
					t.Fatal(err)
				}
			}
			return im, sink
		}
		whole, ws := fresh()
		streamed, ss := fresh()
		_, werr := whole.ApplyData(data)
		_, serr := streamed.ApplyFrom(bytes.NewReader(data))
		if (werr == nil) != (serr == nil) {
			t.Fatalf("whole-file error %v, streamed error %v", werr, serr)
		}
		if serr != nil {
			var ce *CorruptError
			var ge *GapError
			var ms *MissingSnapshotError
			if !errors.As(serr, &ce) && !errors.As(serr, &ge) && !errors.As(serr, &ms) {
				t.Fatalf("untyped error: %v", serr)
			}
			return
		}
		werr, serr = whole.Finish(), streamed.Finish()
		if (werr == nil) != (serr == nil) || !ws.equal(ss) {
			t.Fatal("the streamed apply built another image than the whole-file apply")
		}
	})
}

// sparseSink keeps the writes of an image by offset.
type sparseSink struct {
	pages map[int64][]byte
	size  int64
}

func (s *sparseSink) WriteAt(p []byte, off int64) (int, error) {
	s.pages[off] = bytes.Clone(p)
	return len(p), nil
}

func (s *sparseSink) Truncate(size int64) error {
	for off := range s.pages {
		if off >= size {
			delete(s.pages, off)
		}
	}
	s.size = size
	return nil
}

func (s *sparseSink) equal(o *sparseSink) bool {
	if s.size != o.size || len(s.pages) != len(o.pages) {
		return false
	}
	for off, p := range s.pages {
		if !bytes.Equal(p, o.pages[off]) {
			return false
		}
	}
	return true
}
