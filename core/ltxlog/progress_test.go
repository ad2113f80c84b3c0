package ltxlog

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/page"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestRestoreProgressStartsAtZero: a restore reports (0, total) before it
// reads anything, and advances while it reads the snapshot, which holds
// most of the bytes, rather than first showing up once that file is done
// (at 50 to 96%).
func TestRestoreProgressStartsAtZero(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	const ps, n = 4096, 512 // a 2 MiB snapshot of random (incompressible) pages
	put := func(min, max ltx.TXID, pgnos ...uint32) int64 {
		var pages []page.Page
		for _, p := range pgnos {
			buf := make([]byte, ps)
			rand.Read(buf)
			pages = append(pages, page.Page{Pgno: p, Data: buf})
		}
		data, err := ltx.Encode(ltx.Header{PageSize: ps, Commit: n, MinTXID: min, MaxTXID: max, Timestamp: int64(max)}, pages)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, ltx.Key(cell, 1, 0, min, max), data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		return int64(len(data))
	}
	var all []uint32
	for p := uint32(1); p <= n; p++ {
		all = append(all, p)
	}
	snapshot := put(1, 1, all...)
	total := snapshot + put(2, 2, 3) + put(3, 3, 7)

	type call struct{ done, total int64 }
	var calls []call
	if _, err := Restore(ctx, s, cell, RestoreOptions{Progress: func(done, total int64) { calls = append(calls, call{done, total}) }}); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[0] != (call{0, total}) {
		t.Fatalf("first progress call %v, want (0, %d)", calls, total)
	}
	if last := calls[len(calls)-1]; last != (call{total, total}) {
		t.Fatalf("last progress call %v, want (%d, %d)", last, total, total)
	}
	inside := 0
	for i, c := range calls {
		if c.total != total || (i > 0 && c.done < calls[i-1].done) {
			t.Fatalf("progress went back or changed its total: %v", calls)
		}
		if c.done > 0 && c.done < snapshot {
			inside++
		}
	}
	if inside == 0 {
		t.Fatalf("no progress while the %d-byte snapshot was read: %v", snapshot, calls)
	}
}
