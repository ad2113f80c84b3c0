package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// writeEpoch runs a log for epoch over d, acknowledging n commits, and
// returns the image after each.
func writeEpoch(t *testing.T, s store.Store, epoch uint64, d *pageDB, r *rand.Rand, n int, restore bool) [][]byte {
	t.Helper()
	ctx := context.Background()
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: -1, RetryDelay: time.Millisecond})
	cl, err := lg.Open(ctx, openReq(cell, epoch, d, restore))
	if err != nil {
		t.Fatalf("open epoch %d: %v", epoch, err)
	}
	var images [][]byte
	for i := 1; i <= n; i++ {
		d.mutate(r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatalf("epoch %d commit %d: %v", epoch, i, err)
		}
		images = append(images, d.image())
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	return images
}

func listKeys(t *testing.T, s store.Store, prefix string) []string {
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

// TestRestoreRefusesAnEpochWithoutItsSnapshot: epoch 2's snapshot is gone.
// Its deltas over epoch 1's snapshot would pass every check and still be a
// state nobody wrote; every kind of restore, and a node opening the cell,
// must refuse with an error naming the missing key.
func TestRestoreRefusesAnEpochWithoutItsSnapshot(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	r := rand.New(rand.NewPCG(11, 1))
	d := newPageDB(512, true)
	writeEpoch(t, s, 1, d, r, 4, false)
	writeEpoch(t, s, 2, d, r, 4, true)
	missing := ltx.Key(cell, 2, 0, 1, 1)
	if err := s.Delete(ctx, missing); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var me *ltx.MissingSnapshotError
		if !errors.As(err, &me) || me.Epoch != 2 || me.Missing != missing || me.Older != 1 {
			t.Fatalf("%s: err = %v, want *ltx.MissingSnapshotError for epoch 2", what, err)
		}
		if !strings.Contains(err.Error(), missing) {
			t.Fatalf("%s: %q does not name %s", what, err, missing)
		}
	}
	_, err := Restore(ctx, s, cell, RestoreOptions{})
	check("restore", err)
	_, err = Restore(ctx, s, cell, RestoreOptions{TXID: 3})
	check("restore --txid 3", err)
	_, err = Restore(ctx, s, cell, RestoreOptions{Time: time.Now().Add(time.Hour)})
	check("restore --time", err)
	f, err := os.CreateTemp(t.TempDir(), "restore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = RestoreTo(ctx, s, cell, RestoreOptions{}, f)
	check("restore to a file", err)

	// A node taking the cell refuses it and writes nothing: no snapshot
	// of a guessed state under the new epoch.
	lg, _ := New(Options{Logger: quiet, Store: s})
	fresh := newPageDB(512, true)
	_, err = lg.Open(ctx, openReq(cell, 3, fresh, true))
	check("open", err)
	if keys := listKeys(t, s, ltx.EpochPrefix(cell, 3)); len(keys) != 0 {
		t.Fatalf("a refused open wrote %v", keys)
	}
	if len(fresh.pages) != 0 {
		t.Fatalf("a refused open restored %d pages into the database", len(fresh.pages))
	}

	// Putting the snapshot back (here: moving epoch 2 aside, the other
	// repair the message names) makes the cell restorable again.
	for _, k := range listKeys(t, s, ltx.EpochPrefix(cell, 2)) {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Restore(ctx, s, cell, RestoreOptions{}); err != nil {
		t.Fatalf("after moving epoch 2 aside: %v", err)
	}
}

// TestOpenRefusesAnEpochTheLogAlreadyHolds: a writer whose epoch (or a
// newer one) already has files in the log must not write into it, as
// celld refuses a restore when the newest epoch is not below its own.
func TestOpenRefusesAnEpochTheLogAlreadyHolds(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	r := rand.New(rand.NewPCG(12, 1))
	writeEpoch(t, s, 5, newPageDB(512, true), r, 2, false)
	lg, _ := New(Options{Logger: quiet, Store: s})
	for _, epoch := range []uint64{4, 5} {
		_, err := lg.Open(ctx, openReq(cell, epoch, newPageDB(512, true), true))
		var ee *durability.EpochInUseError
		if !errors.As(err, &ee) || ee.Epoch != epoch || ee.Newest != 5 || !strings.HasPrefix(ee.Key, ltx.EpochPrefix(cell, 5)) {
			t.Fatalf("open epoch %d over a log at 5: %v", epoch, err)
		}
		for _, want := range []string{"cells/" + cell + "/own.json", `{"node":"","epoch":5}`, ee.Key} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("message %q does not name %s", err, want)
			}
		}
	}
	if _, err := lg.Open(ctx, openReq(cell, 6, newPageDB(512, true), true)); err != nil {
		t.Fatalf("open epoch 6: %v", err)
	}
}

// TestFirstObjectOfAnEpochIsCreateOnly: a second writer in an epoch (one
// that did not restore, so nothing else stopped it) fails on its first
// file instead of replacing the first writer's snapshot; a lost response
// to the writer's own create is recognized by reading the object back.
func TestFirstObjectOfAnEpochIsCreateOnly(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	r := rand.New(rand.NewPCG(13, 1))
	first := ltx.Key(cell, 2, 0, 1, 1)
	// The first writer's create is applied but its answer lost: the
	// retry finds its own object, and the commit is acknowledged.
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: first, Fault: faultstore.LoseResponse})
	writeEpoch(t, fs, 2, newPageDB(512, true), r, 3, false)
	before := mustGet(t, fs, first)

	lg, _ := New(Options{Logger: quiet, Store: fs, RetryDelay: time.Millisecond})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 2, d, false))
	if err != nil {
		t.Fatal(err)
	}
	d.mutate(r)
	err = wait(t, appendCommit(t, cl, d, 1))
	var ee *durability.EpochInUseError
	var ue *UploadError
	if !errors.As(err, &ee) || !errors.As(err, &ue) || ue.Key != first || ee.Epoch != 2 {
		t.Fatalf("second writer's first commit: %v", err)
	}
	if !bytes.Equal(mustGet(t, fs, first), before) {
		t.Fatal("the second writer replaced the epoch's snapshot")
	}
	cl.Close(ctx, false)
	if _, err := Restore(ctx, fs, cell, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFirstFileIsTXIDOneAlone: when the epoch's first upload carries
// several commits, TXID 1 still goes up alone, so the epoch's first key is
// always ...01-...01 (celld's too) and a second writer collides on it.
func TestFirstFileIsTXIDOneAlone(t *testing.T) {
	s := memstore.New()
	lg, _ := New(Options{Logger: quiet, Store: s})
	page := func(b byte) map[uint32][]byte { return map[uint32][]byte{1: bytes.Repeat([]byte{b}, 512)} }
	batch := func() []*pending {
		return []*pending{
			{txid: 1, pageSize: 512, count: 2, pages: page(1)},
			{txid: 2, pageSize: 512, count: 2, pages: page(2)},
			{txid: 3, pageSize: 512, count: 2, pages: page(3)},
		}
	}
	c := newCellLog(lg.opts, cell, 1, spoolOf(t, make([]byte, 1024)), 512, true, nil)
	defer c.Close(context.Background(), false)
	if err := c.uploadBatch(batch()); err != nil {
		t.Fatal(err)
	}
	keys := listKeys(t, s, ltx.EpochPrefix(cell, 1))
	if want := []string{ltx.Key(cell, 1, 0, 1, 1), ltx.Key(cell, 1, 0, 2, 3)}; strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	other := newCellLog(lg.opts, cell, 1, spoolOf(t, bytes.Repeat([]byte{9}, 1024)), 512, true, nil)
	defer other.Close(context.Background(), false)
	var ee *durability.EpochInUseError
	if err := other.uploadBatch(batch()); !errors.As(err, &ee) {
		t.Fatalf("a second writer's first batch: %v", err)
	}
	if keys2 := listKeys(t, s, ltx.EpochPrefix(cell, 1)); strings.Join(keys2, " ") != strings.Join(keys, " ") {
		t.Fatalf("keys after the collision %v", keys2)
	}
	// Epoch 0 (no ownership) has no generations: written plainly.
	zero := newCellLog(lg.opts, cell, 0, spoolOf(t, make([]byte, 1024)), 512, true, nil)
	defer zero.Close(context.Background(), false)
	if err := zero.uploadBatch(batch()); err != nil {
		t.Fatal(err)
	}
	again := newCellLog(lg.opts, cell, 0, spoolOf(t, bytes.Repeat([]byte{9}, 1024)), 512, true, nil)
	defer again.Close(context.Background(), false)
	if err := again.uploadBatch(batch()); err != nil {
		t.Fatalf("epoch 0 rewritten: %v", err)
	}
}
