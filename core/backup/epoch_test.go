package backup

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestOpenRefusesAnEpochWithBackups: an epoch that already has backups, or
// that a newer epoch's backups follow, belongs to another writer.
func TestOpenRefusesAnEpochWithBackups(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	r := newRig(t, s, false, 3) // epoch 7
	r.commit(rand.New(rand.NewPCG(1, 1)))
	if err := r.tick(); err != nil {
		t.Fatal(err)
	}
	lg, _ := New(Options{Store: s, Logger: quiet})
	for _, epoch := range []uint64{6, 7} {
		for _, restore := range []bool{false, true} {
			_, err := lg.Open(ctx, openReq(cell, epoch, newMemPages(256, false), restore))
			var ee *durability.EpochInUseError
			if !errors.As(err, &ee) || ee.Newest != 7 || ee.Epoch != epoch || ee.Key != Key(cell, 7, 1) {
				t.Fatalf("open epoch %d (restore %v): %v", epoch, restore, err)
			}
		}
	}
	cl, err := lg.Open(ctx, openReq(cell, 8, newMemPages(256, false), true))
	if err != nil {
		t.Fatalf("open epoch 8: %v", err)
	}
	cl.Close(ctx, false)
}

// TestSaveNeverReplacesAnotherWritersBackup: two logs that both opened
// epoch 7 before either saved; the second save of the same key fails
// instead of replacing the first. A save whose answer was lost is
// recognized as this log's own on the next interval.
func TestSaveNeverReplacesAnotherWritersBackup(t *testing.T) {
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	a := newRig(t, fs, false, 3)
	b := newRig(t, fs, false, 3)
	a.commit(rand.New(rand.NewPCG(2, 1)))
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: Key(cell, 7, 1), Fault: faultstore.LoseResponse})
	if err := a.tick(); err == nil {
		t.Fatal("a lost answer was not reported")
	}
	if err := a.tick(); err != nil {
		t.Fatalf("the retried save did not recognize its own backup: %v", err)
	}
	saved, err := fs.Get(context.Background(), Key(cell, 7, 1))
	if err != nil {
		t.Fatal(err)
	}
	b.commit(rand.New(rand.NewPCG(3, 1)))
	var ee *durability.EpochInUseError
	if err := b.tick(); !errors.As(err, &ee) || ee.Key != Key(cell, 7, 1) {
		t.Fatalf("second writer's save: %v", err)
	}
	if now, _ := fs.Get(context.Background(), Key(cell, 7, 1)); !bytes.Equal(now.Data, saved.Data) {
		t.Fatal("the second writer replaced the backup")
	}
}
