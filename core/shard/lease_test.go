package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/lease"
)

func open(t *testing.T, dir string, n int) *Lease {
	t.Helper()
	l, err := Open(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func grantOf(t *testing.T, l *Lease, cell string) lease.Grant {
	t.Helper()
	g, err := takeWriting(context.Background(), l, cell)
	if err != nil {
		t.Fatalf("TryAcquire(%s): %v", cell, err)
	}
	return g
}

// takeWriting takes a cell as a writer does: TryAcquire, then RecordEpoch
// (the runtime records the epoch with the grant's first write).
func takeWriting(ctx context.Context, l *Lease, cell string) (lease.Grant, error) {
	g, err := l.TryAcquire(ctx, cell)
	if err != nil {
		return nil, err
	}
	if err := g.(lease.EpochRecorder).RecordEpoch(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

func refused(t *testing.T, l *Lease, cell string) {
	t.Helper()
	g, err := l.TryAcquire(context.Background(), cell)
	var oe *lease.CellOwnedElsewhereError
	if !errors.As(err, &oe) {
		t.Fatalf("TryAcquire(%s) = %v, %v; want *lease.CellOwnedElsewhereError", cell, g, err)
	}
	if class, id := oe.Class, oe.ID; class+":"+id != cell {
		t.Fatalf("the refusal names %s/%s, not %s", class, id, cell)
	}
}

// cellsIn returns k distinct cell keys that fall in shard i of n.
func cellsIn(i, n, k int) []string {
	var out []string
	for j := 0; len(out) < k; j++ {
		if c := fmt.Sprintf("Counter:c%d", j); Of(c, n) == i {
			out = append(out, c)
		}
	}
	return out
}

func isLost(g lease.Grant) bool {
	select {
	case <-g.Lost():
		return true
	default:
		return false
	}
}

func TestOpenLaysOutTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "shards")
	open(t, dir, 5)
	data, err := os.ReadFile(filepath.Join(dir, "shards.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l layout
	if err := json.Unmarshal(data, &l); err != nil || l != (layout{Format: 1, Shards: 5, Hash: "fnv1a64"}) {
		t.Fatalf("shards.json = %s (%v)", data, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := "[shard-0.lock shard-1.lock shard-2.lock shard-3.lock shard-4.lock shards.json]"
	if fmt.Sprint(names) != want {
		t.Fatalf("directory holds %v, want %s", names, want)
	}
	// Reopening with the same count is fine and changes nothing.
	open(t, dir, 5)
}

func TestOpenRefusesAnotherCount(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, 16)
	_, err := Open(dir, 8)
	var me *CountMismatchError
	if !errors.As(err, &me) || me.Layout != 16 || me.Requested != 8 {
		t.Fatalf("Open with another count: %v, want *CountMismatchError 16 vs 8", err)
	}
	if _, err := os.Stat(lockPath(dir, 0)); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	for _, n := range []int{0, -1, MaxShards + 1} {
		if _, err := Open(t.TempDir(), n); err == nil {
			t.Errorf("Open with %d shards succeeded", n)
		}
	}
	for _, body := range []string{"", "{", `{"format":2,"shards":4,"hash":"fnv1a64"}`,
		`{"format":1,"shards":4,"hash":"crc32"}`, `{"format":1,"shards":0,"hash":"fnv1a64"}`} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "shards.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, 4)
		var de *DamagedError
		if !errors.As(err, &de) {
			t.Errorf("shards.json %q: %v, want *DamagedError", body, err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "shards.json")); string(got) != body {
			t.Errorf("shards.json %q was rewritten to %q", body, got)
		}
	}
}

// TestOpenRace: processes opening a new directory at once agree on one
// layout, and only those asking for its count succeed.
func TestOpenRace(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Open(dir, 4+i%2)
			if err == nil {
				l.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	var l layout
	data, _ := os.ReadFile(filepath.Join(dir, "shards.json"))
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if (4+i%2 == l.Shards) != (err == nil) {
			t.Errorf("opener %d (count %d) with layout %d: %v", i, 4+i%2, l.Shards, err)
		}
	}
}

func TestShardIsTheUnitOfOwnership(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 4), open(t, dir, 4)
	same := cellsIn(2, 4, 3)
	other := cellsIn(3, 4, 1)[0]
	grantOf(t, a, same[0])
	refused(t, b, same[0])
	refused(t, b, same[1]) // another cell, same shard
	grantOf(t, b, other)   // another shard
	refused(t, a, other)
	// a holds shard 2 for as long as it holds any of its cells.
	g1 := grantOf(t, a, same[1])
	g2 := grantOf(t, a, same[2])
	if err := g1.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	refused(t, b, same[1])
	g2.Release(context.Background())
	refused(t, b, same[0]) // the first grant is still out
}

func TestReleaseOfLastGrantLetsTheShardGo(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 2), open(t, dir, 2)
	cells := cellsIn(0, 2, 2)
	g1, g2 := grantOf(t, a, cells[0]), grantOf(t, a, cells[1])
	ctx := context.Background()
	g1.Release(ctx)
	if !isLost(g1) || !errors.Is(g1.Err(), lease.ErrReleased) || !errors.Is(g1.CheckWrite(), lease.ErrReleased) {
		t.Fatalf("released grant: lost=%v err=%v check=%v", isLost(g1), g1.Err(), g1.CheckWrite())
	}
	if g2.CheckWrite() != nil || isLost(g2) {
		t.Fatalf("the other grant of the shard ended with the first")
	}
	g2.Release(ctx)
	gb := grantOf(t, b, cells[0])
	if gb.Epoch() <= g2.Epoch() {
		t.Fatalf("epoch went from %d to %d across processes", g2.Epoch(), gb.Epoch())
	}
	// Releasing twice is harmless and does not touch b's lock.
	if err := g2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	refused(t, a, cells[1])
}

func TestEpochsGrowPerShardAcrossLeases(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cells := cellsIn(1, 3, 3)
	var last uint64
	for round := 0; round < 4; round++ {
		l, err := Open(dir, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			g := grantOf(t, l, c)
			if g.Epoch() != last+1 {
				t.Fatalf("round %d, %s: epoch %d after %d", round, c, g.Epoch(), last)
			}
			if g.BucketWins() {
				t.Fatal("BucketWins on one host")
			}
			last = g.Epoch()
			if round%2 == 0 {
				g.Release(ctx)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Another shard keeps its own count.
	l := open(t, dir, 3)
	if g := grantOf(t, l, cellsIn(0, 3, 1)[0]); g.Epoch() != 1 {
		t.Fatalf("a fresh shard starts at epoch %d", g.Epoch())
	}
}

func TestTakingACellAgainSupersedes(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 1), open(t, dir, 1)
	old := grantOf(t, a, "Counter:x")
	cur := grantOf(t, a, "Counter:x")
	if cur.Epoch() <= old.Epoch() || !isLost(old) || old.Err() == nil {
		t.Fatalf("old epoch %d lost=%v err=%v, new epoch %d", old.Epoch(), isLost(old), old.Err(), cur.Epoch())
	}
	var le *lease.LeaseLapsedError
	if !errors.As(old.CheckWrite(), &le) {
		t.Fatalf("the superseded grant's CheckWrite = %v", old.CheckWrite())
	}
	// Releasing the superseded grant neither ends the current one nor
	// lets the shard go.
	old.Release(context.Background())
	if cur.CheckWrite() != nil {
		t.Fatal("releasing a superseded grant ended the current one")
	}
	refused(t, b, "Counter:x")
}

func TestCloseEndsEveryGrant(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 4), open(t, dir, 4)
	var gs []lease.Grant
	for i := 0; i < 8; i++ {
		gs = append(gs, grantOf(t, a, fmt.Sprintf("Counter:%d", i)))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		var le *lease.LeaseLapsedError
		if !isLost(g) || !errors.Is(g.Err(), ErrClosed) || !errors.As(g.CheckWrite(), &le) {
			t.Fatalf("after Close: lost=%v err=%v check=%v", isLost(g), g.Err(), g.CheckWrite())
		}
		if err := g.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.TryAcquire(context.Background(), "Counter:0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryAcquire after Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for i := 0; i < 8; i++ {
		grantOf(t, b, fmt.Sprintf("Counter:%d", i))
	}
}

func TestTryAcquireRefusesBadCalls(t *testing.T) {
	l := open(t, t.TempDir(), 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.TryAcquire(ctx, "Counter:x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if _, err := l.TryAcquire(context.Background(), ""); err == nil {
		t.Fatal("empty cell key granted")
	}
}

// TestDeletedShardFileIsRefused: a lock file recreated under a running
// holder would not exclude it, and its epoch count would start over.
func TestDeletedShardFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 2), open(t, dir, 2)
	cell := cellsIn(1, 2, 1)[0]
	grantOf(t, a, cell)
	if err := os.Remove(lockPath(dir, 1)); err != nil {
		t.Fatal(err)
	}
	_, err := b.TryAcquire(context.Background(), cell)
	var de *DamagedError
	if !errors.As(err, &de) || de.Path != lockPath(dir, 1) {
		t.Fatalf("TryAcquire with the shard file gone: %v, want *DamagedError", err)
	}
	if _, err := os.Stat(lockPath(dir, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the shard file was recreated (%v)", err)
	}
	// The other shard is unaffected.
	grantOf(t, b, cellsIn(0, 2, 1)[0])
}

// TestDamagedEpochIsRefused: a shard file whose epoch cannot be read is
// refused, and the refusal does not keep the lock.
func TestDamagedEpochIsRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 1), open(t, dir, 1)
	if err := os.WriteFile(lockPath(dir, 0), slots(torn(4), torn(5)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Lease{a, b} {
		_, err := l.TryAcquire(context.Background(), "Counter:x")
		var de *DamagedError
		if !errors.As(err, &de) {
			t.Fatalf("TryAcquire on a damaged shard file: %v, want *DamagedError", err)
		}
	}
}

// TestConcurrentGrants: many goroutines taking and releasing cells of one
// Lease, with a second Lease probing: grants never overlap across Leases
// and every shard's epochs are distinct (run with -race).
func TestConcurrentGrants(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 4), open(t, dir, 4)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[[2]uint64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := a
			if w%2 == 1 {
				l = b
			}
			for i := 0; i < 50; i++ {
				cell := fmt.Sprintf("Counter:w%d-%d", w, i%5)
				g, err := takeWriting(ctx, l, cell)
				if errors.As(err, new(*lease.CellOwnedElsewhereError)) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				key := [2]uint64{uint64(Of(cell, 4)), g.Epoch()}
				mu.Lock()
				if seen[key] {
					t.Errorf("shard %d epoch %d granted twice", key[0], key[1])
				}
				seen[key] = true
				mu.Unlock()
				g.Release(ctx)
			}
		}()
	}
	wg.Wait()
	if len(seen) == 0 {
		t.Fatal("no grant at all")
	}
}

// A Lease that routes, finding the lock held and no holder record, looks
// again for a moment: a holder letting the shard go clears its record
// just before it unlocks, and the call then takes the shard here instead
// of being refused without a route.
func TestTryAcquireWaitsOutAHolderLettingGo(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir, 4) // records no holder: the window, made long
	b, err := Open(dir, 4, WithAddr("unix:/run/b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cell := cellsIn(2, 4, 1)[0]
	ga := grantOf(t, a, cell)
	go func() {
		time.Sleep(2 * time.Millisecond)
		ga.Release(context.Background())
	}()
	g, err := b.TryAcquire(context.Background(), cell)
	if err != nil {
		t.Fatalf("the holder let go within the settling time, yet: %v", err)
	}
	g.Release(context.Background())
}
