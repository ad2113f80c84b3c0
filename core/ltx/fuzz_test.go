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
