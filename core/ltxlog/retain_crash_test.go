package ltxlog

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// stopBeforeDeleteStore refuses, once each, the deletion of a level-0
// file while a level-1 file ending at the same TXID is stored: the bucket
// a crash (or a failed delete) leaves between a run's block and the
// deletion of the run's last level-0 file, or between any later steps
// that delete such a file. The log then goes on as a process that
// restarted the deletions would.
type stopBeforeDeleteStore struct {
	*countingStore
	mu      sync.Mutex
	refused map[string]bool
}

var errDeleteStopped = errors.New("test: the process stopped before this deletion")

func (s *stopBeforeDeleteStore) Delete(ctx context.Context, key string) error {
	f, ok := ltx.ParseKey(key)
	if ok && f.Level == 0 {
		page, err := store.ListAll(ctx, s.countingStore.Store, store.ListOptions{Prefix: ltx.LevelPrefix(f.Cell, f.Epoch, 1)})
		if err != nil {
			return err
		}
		for _, o := range page.Objects {
			if b, ok := ltx.ParseKey(o.Key); ok && b.MaxTXID == f.MaxTXID {
				s.mu.Lock()
				first := !s.refused[key]
				s.refused[key] = true
				s.mu.Unlock()
				if first {
					return errDeleteStopped
				}
			}
		}
	}
	return s.countingStore.Delete(ctx, key)
}

// TestRetentionSurvivesAStopBeforeTheRunsLastDeletion: the ladder over
// runs once deleted each run's last level-0 file as soon as the run's
// block (or full merge) was stored, outside retire's order. A stop between
// the two left that file listed and out of the bookkeeping; retire never
// deleted it, and once the window passed its run, deleted the level-0
// files and blocks its end restores from, so a listed state — one
// BookmarkForTime may name — no longer restored. Here every such deletion
// is refused once, over 9.4 simulated days with a 5-day window; every file
// end still listed afterwards must restore exactly, and the window must
// still have aged files out.
func TestRetentionSurvivesAStopBeforeTheRunsLastDeletion(t *testing.T) {
	ctx := context.Background()
	s := &stopBeforeDeleteStore{countingStore: newCountingStore(), refused: map[string]bool{}}
	clk := clock.NewFake(retainStart)
	lg, _ := New(Options{Logger: quiet, Store: s, Clock: clk, SpoolDir: t.TempDir(), Retention: 5 * 24 * time.Hour})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 5, d, false))
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*cellLog)
	r := rand.New(rand.NewPCG(5, 6))
	for i := 1; i <= 900; i++ {
		clk.Set(retainStart.Add(time.Duration(i) * 15 * time.Minute))
		retainMutate(d, r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
		if i%8 == 0 {
			waitCompactor(t, c)
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	refused := len(s.refused)
	s.mu.Unlock()
	if refused == 0 {
		t.Fatal("no deletion of a level-0 file a level-1 file ends at was attempted")
	}
	files, err := listEpochFiles(ctx, s.countingStore.Store, cell, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := ltx.PlanTo(files, f.MaxTXID); err != nil {
			t.Fatalf("%d deletions refused once; the state at the end of %s is listed but does not restore: %v", refused, f.Key, err)
		}
	}
	if res, err := Restore(ctx, s.countingStore, cell, RestoreOptions{}); err != nil || res.TXID != 900 {
		t.Fatalf("newest restore: %v", err)
	}
	if _, err := Restore(ctx, s.countingStore, cell, RestoreOptions{Epoch: 5, TXID: 11}); err == nil {
		t.Fatal("a state older than the window still restores: nothing aged out")
	}
	t.Logf("%d deletions refused once; %d files listed at the end, every end restores", refused, len(files))
}
