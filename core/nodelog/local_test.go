package nodelog_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// localRows writes golden TXIDs 2..6 of a cell at epoch 4 through a
// single host session's node log (its snapshot, TXID 1, in the prefix),
// and returns the log, stopped as a killed process leaves it: nothing
// tiered, bundles in the bucket, the session's lock file in dir.
func localRows(t *testing.T, s store.Store, dir, node string, sess *nodelog.LocalSession) {
	t.Helper()
	files := golden(t)
	put(t, s, ltx.Key(cell, 4, 0, 1, 1), files[0])
	nl, err := nodelog.New(nodelog.Options{Store: s, Node: node, Generation: sess.Generation(), Confirmer: sess, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for x := 2; x <= 6; x++ {
		if err := nl.Submit(ctx, []nodelog.Row{{Cell: cell, CellEpoch: 4, TXID: ltx.TXID(x), Data: files[x-1]}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nl.Close(ctx, false); err != nil { // not final: rows stay in bundles
		t.Fatal(err)
	}
}

// TestLocalRecoveryFoldsOnlyDeadSessions: two sessions share a lock
// directory. While the first's lock is held, a recovery from the second
// leaves it alone; once it is let go (its process died), the recovery
// folds its rows into the cell's prefix (restorable to TXID 6), deletes
// its bundles and its lock file, and a second recovery finds nothing.
func TestLocalRecoveryFoldsOnlyDeadSessions(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	dir := t.TempDir()
	node, err := nodelog.LocalNodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := nodelog.LocalNodeID(dir); err != nil || again != node {
		t.Fatalf("node id read again: %q, %v; want %q", again, err, node)
	}
	dead, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	live, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(true)
	localRows(t, s, dir, node, dead)
	if err := dead.ConfirmLog(ctx); err != nil {
		t.Fatalf("a held session does not confirm: %v", err)
	}
	r := nodelog.LocalRecovery{Store: s, Dir: dir, Node: node, Self: live.Generation(), Opts: nodelog.FoldOptions{Logger: quiet}}
	if got, err := r.Recover(ctx, true); err != nil || len(got) != 0 {
		t.Fatalf("recovery while the session's lock is held: %+v, %v; want nothing folded", got, err)
	}
	if st, err := nodelog.LocalState(dir, dead.Generation()); err != nil || st != nodelog.LocalOpen {
		t.Fatalf("state of a held session: %q, %v", st, err)
	}
	if top, _ := nodelog.Covered(ctx, s, cell, 4); top != 1 {
		t.Fatalf("prefix covers TXID %d before the fold; want 1", top)
	}

	dead.Close(false) // the process dies: its lock is free, its file stays
	if st, err := nodelog.LocalState(dir, dead.Generation()); err != nil || st != nodelog.LocalDead {
		t.Fatalf("state of a dead session: %q, %v", st, err)
	}
	got, err := r.Recover(ctx, false)
	if err != nil || len(got) != 1 || got[0].Generation != dead.Generation() || got[0].Folded != 5 {
		t.Fatalf("recovery of the dead session: %+v, %v; want its 5 rows folded", got, err)
	}
	if top, _ := nodelog.Covered(ctx, s, cell, 4); top != 6 {
		t.Fatalf("prefix covers TXID %d after the fold; want 6", top)
	}
	if _, err := ltxlog.Restore(ctx, s, cell, ltxlog.RestoreOptions{}); err != nil {
		t.Fatalf("restore after the fold: %v", err)
	}
	if bundles, _ := nodelog.ListBundles(ctx, s, node, dead.Generation()); len(bundles) != 0 {
		t.Fatalf("%d bundles left after the fold", len(bundles))
	}
	if _, err := os.Stat(filepath.Join(dir, dead.Generation()+".lock")); !os.IsNotExist(err) {
		t.Fatalf("the dead session's lock file is still there: %v", err)
	}
	if got, err := r.Recover(ctx, true); err != nil || len(got) != 0 {
		t.Fatalf("a second recovery: %+v, %v", got, err)
	}
	if err := live.ConfirmLog(ctx); err != nil {
		t.Fatalf("the live session stopped confirming: %v", err)
	}
}

// TestLocalRecoveryLeavesALaterEpoch: a dead session's rows of a cell
// epoch are not folded once the bucket holds a later epoch of the cell
// (the epoch was let go, its acknowledged rows tiered).
func TestLocalRecoveryLeavesALaterEpoch(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	dir := t.TempDir()
	node, _ := nodelog.LocalNodeID(dir)
	dead, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	localRows(t, s, dir, node, dead)
	dead.Close(false)
	put(t, s, ltx.Key(cell, 5, 0, 1, 1), golden(t)[0])
	got, err := (nodelog.LocalRecovery{Store: s, Dir: dir, Node: node, Opts: nodelog.FoldOptions{Logger: quiet}}).Recover(ctx, true)
	if err != nil || len(got) != 1 || got[0].Folded != 0 || got[0].Skipped != 1 {
		t.Fatalf("recovery: %+v, %v; want the epoch skipped", got, err)
	}
	if top, _ := nodelog.Covered(ctx, s, cell, 4); top != 1 {
		t.Fatalf("epoch 4 covers TXID %d; want 1 (nothing folded)", top)
	}
}

// TestLocalRecoverersWaitForEachOther: 20 recoveries race over one dead
// session. Each returns only once the session is folded (one folds, the
// others wait for its fold lock, then find nothing left), so none of them
// may report the prefix short of TXID 6 when it returns.
func TestLocalRecoverersWaitForEachOther(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	dir := t.TempDir()
	node, _ := nodelog.LocalNodeID(dir)
	dead, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	localRows(t, s, dir, node, dead)
	dead.Close(false)
	slow := &slowStore{Store: s, delay: 5 * time.Millisecond}
	var wg sync.WaitGroup
	var mu sync.Mutex
	folded := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := (nodelog.LocalRecovery{Store: slow, Dir: dir, Node: node, Opts: nodelog.FoldOptions{Logger: quiet}}).Recover(ctx, i%2 == 0)
			if err != nil {
				t.Error(err)
				return
			}
			top, err := nodelog.Covered(ctx, s, cell, 4)
			if err != nil || top != 6 {
				t.Errorf("a recovery returned with the prefix at TXID %d (%v); want 6", top, err)
			}
			mu.Lock()
			for _, g := range got {
				folded += g.Folded
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if folded != 5 {
		t.Errorf("%d rows folded in all; want 5 (one fold)", folded)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("lock directory after the recoveries: %v; want only node-id", entries)
	}
}

// slowStore delays every write, so racing recoveries overlap.
type slowStore struct {
	store.Store
	delay time.Duration
}

func (s *slowStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	time.Sleep(s.delay)
	return s.Store.Put(ctx, key, data, opts)
}
