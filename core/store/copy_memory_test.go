package store_test

import (
	"io"
	"testing"

	"github.com/cellb/cellb/core/heaptest"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// streamingOnly hides the bucket's Copier and keeps its streams.
type streamingOnly struct{ heaptest.Bucket }

func (s streamingOnly) Copy() {} // shadows the promoted store.Copier method

// A copy on a store without a Copier streams: a 64 MiB object copies with
// no whole-object call (the bucket refuses them) and a live heap that does
// not grow with the object.
func TestCopyByStreamingHoldsNoObject(t *testing.T) {
	ctx := t.Context()
	peak := &heaptest.HeapPeak{}
	b := heaptest.Bucket{Store: memstore.New(), Peak: peak, MaxWhole: 1 << 20}
	s := streamingOnly{b}
	if _, ok := any(s).(store.Copier); ok {
		t.Fatal("the wrapper still has a Copier")
	}
	const size = 64 << 20
	body := io.LimitReader(zeros{}, size)
	if _, err := store.PutFrom(ctx, s, "src", body, size, store.PutOptions{Metadata: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	base := peak.Reset()
	if _, err := store.Copy(ctx, s, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	if grew := int64(peak.Max()) - int64(base); grew > 16<<20 {
		t.Fatalf("the live heap grew by %d MiB copying a 64 MiB object, want under 16 MiB", grew>>20)
	}
	r, err := store.NewReader(ctx, s, "dst")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := io.Copy(io.Discard, r)
	if err != nil || n != size || r.Metadata["k"] != "v" {
		t.Fatalf("the copy: %d bytes, metadata %v, %v", n, r.Metadata, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
