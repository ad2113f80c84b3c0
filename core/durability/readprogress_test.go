package durability_test

import (
	"context"
	"io"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// A restore without progress of its own reports, through ReadProgress,
// (0, total) before it reads, every byte it reads (whole gets and streamed
// ranges), never more than the total, and the end once done.
func TestReadProgressCountsEveryByteRead(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	for key, size := range map[string]int{"log/a": 1000, "log/b": 3000, "other/c": 5000} {
		if _, err := s.Put(ctx, key, make([]byte, size), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	type report struct{ done, total int64 }
	var got []report
	ws, done, err := durability.ReadProgress(ctx, s, "log/", func(d, t int64) { got = append(got, report{d, t}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (report{0, 4000}) {
		t.Fatalf("before reading: %v, want [(0, 4000)]", got)
	}
	if _, err := ws.Get(ctx, "log/a"); err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1]; last != (report{1000, 4000}) {
		t.Fatalf("after a whole get: %v, want (1000, 4000)", last)
	}
	r, err := store.NewRangeReader(ctx, ws, "log/b", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if last := got[len(got)-1]; last != (report{4000, 4000}) {
		t.Fatalf("after a streamed read: %v, want (4000, 4000)", last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].done < got[i-1].done || got[i].done > got[i].total {
			t.Fatalf("report %d %v after %v: not monotonic within the total", i, got[i], got[i-1])
		}
	}
	done()
	if last := got[len(got)-1]; last != (report{4000, 4000}) {
		t.Fatalf("done: %v", last)
	}
	same, _, err := durability.ReadProgress(ctx, s, "log/", nil)
	if err != nil || same != store.Store(s) {
		t.Fatalf("without progress the store is not itself: %v", err)
	}
}
