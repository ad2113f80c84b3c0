package modernc

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// csEpoch opens the changeset log for epoch on c and acknowledges one
// insert per id.
func csEpoch(t *testing.T, s store.Store, c *Conn, epoch uint64, restore bool, ids ...int) {
	t.Helper()
	ctx := context.Background()
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	cl, err := lg.Open(ctx, openReq(csCell, epoch, c, restore))
	if err != nil {
		t.Fatalf("open epoch %d: %v", epoch, err)
	}
	for i, id := range ids {
		mustExec(t, c, "INSERT INTO items(id, name) VALUES(?, 'x')", id)
		if err := waitDurable(t, cl.Append(durability.Commit{Seq: uint64(i + 1)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
}

func csKeys(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	page, err := store.ListAll(context.Background(), s, store.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestChangesetRestoreRefusesAnEpochWithoutItsSnapshot: epoch 2 lost its
// snapshot. Restoring epoch 1 instead would silently drop every commit
// epoch 2 acknowledged; the restore, and a node opening the cell, refuse.
func TestChangesetRestoreRefusesAnEpochWithoutItsSnapshot(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	src := openT(t, "src.db", false)
	mustExec(t, src, "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT)")
	csEpoch(t, s, src, 1, false, 1, 2)
	csEpoch(t, s, src, 2, true, 3, 4, 5)
	snap := changeset.Key(csCell, 2, 1, 1, true)
	if err := s.Delete(ctx, snap); err != nil {
		t.Fatal(err)
	}
	var me *changeset.MissingSnapshotError
	_, err := changeset.Restore(ctx, s, csCell, openT(t, "", false))
	if !errors.As(err, &me) || me.Epoch != 2 || me.Older != 1 || me.First != changeset.Key(csCell, 2, 2, 2, false) {
		t.Fatalf("restore: %v", err)
	}
	for _, want := range []string{changeset.EpochPrefix(csCell, 2), me.First, "move " + changeset.EpochPrefix(csCell, 2) + " aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q does not name %s", err, want)
		}
	}
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	if _, err := lg.Open(ctx, openReq(csCell, 3, openT(t, "", false), true)); !errors.As(err, &me) {
		t.Fatalf("open: %v", err)
	}
	if keys := csKeys(t, s, changeset.EpochPrefix(csCell, 3)); len(keys) != 0 {
		t.Fatalf("a refused open wrote %v", keys)
	}
}

// TestChangesetOpenRefusesAnEpochTheLogAlreadyHolds: a writer must not
// open an epoch that already has files, or that a newer one follows;
// epoch 0 (lease.None) is reopened as before.
func TestChangesetOpenRefusesAnEpochTheLogAlreadyHolds(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	src := openT(t, "src.db", false)
	mustExec(t, src, "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT)")
	csEpoch(t, s, src, 4, false, 1)
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	for _, epoch := range []uint64{3, 4} {
		for _, restore := range []bool{false, true} {
			_, err := lg.Open(ctx, openReq(csCell, epoch, openT(t, "", false), restore))
			var ee *durability.EpochInUseError
			if !errors.As(err, &ee) || ee.Newest != 4 || ee.Epoch != epoch || !strings.HasPrefix(ee.Key, changeset.EpochPrefix(csCell, 4)) {
				t.Fatalf("open epoch %d (restore %v) over a log at 4: %v", epoch, restore, err)
			}
		}
	}
	if _, err := lg.Open(ctx, openReq(csCell, 5, openT(t, "", false), true)); err != nil {
		t.Fatalf("open epoch 5: %v", err)
	}
}

// TestChangesetFirstFileIsCreateOnly: two writers that both opened epoch 3
// before either wrote: the second one's first commit fails instead of
// replacing the first one's snapshot.
func TestChangesetFirstFileIsCreateOnly(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	a, b := openT(t, "a.db", false), openT(t, "b.db", false)
	for _, c := range []*Conn{a, b} {
		mustExec(t, c, "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT)")
	}
	mustExec(t, b, "INSERT INTO items(id, name) VALUES(99, 'b')")
	la, err := lg.Open(ctx, openReq(csCell, 3, a, false))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lg.Open(ctx, openReq(csCell, 3, b, false))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, a, "INSERT INTO items(id, name) VALUES(1, 'a')")
	mustExec(t, a, "INSERT INTO items(id, name) VALUES(2, 'a')")
	da1 := la.Append(durability.Commit{Seq: 1})
	da2 := la.Append(durability.Commit{Seq: 2})
	for _, d := range []durability.Durable{da1, da2} {
		if err := waitDurable(t, d); err != nil {
			t.Fatal(err)
		}
	}
	first := changeset.Key(csCell, 3, 1, 1, true)
	before, err := s.Get(ctx, first)
	if err != nil {
		t.Fatalf("the epoch's first file is not its first commit alone: %v (%v)", err, csKeys(t, s, changeset.EpochPrefix(csCell, 3)))
	}
	mustExec(t, b, "INSERT INTO items(id, name) VALUES(3, 'b')")
	err = waitDurable(t, lb.Append(durability.Commit{Seq: 1}))
	var ee *durability.EpochInUseError
	if !errors.As(err, &ee) || ee.Key != first {
		t.Fatalf("second writer's first commit: %v", err)
	}
	after, _ := s.Get(ctx, first)
	if !bytes.Equal(before.Data, after.Data) {
		t.Fatal("the second writer replaced the epoch's snapshot")
	}
	la.Close(ctx, true)
	lb.Close(ctx, false)
}
