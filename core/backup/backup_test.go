package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

const cell = "Counter:00ff"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is one cell's backup log on a fake clock, with a channel that
// reports each periodic save's outcome.
type rig struct {
	t     *testing.T
	clk   *clock.Fake
	store store.Store
	db    *memPages
	cl    durability.CellLog
	ticks chan error
	seq   uint64
}

func newRig(t *testing.T, s store.Store, capture bool, keep int) *rig {
	t.Helper()
	r := &rig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), store: s, db: newMemPages(256, capture), ticks: make(chan error, 16)}
	lg, err := New(Options{Store: s, Clock: r.clk, Logger: quiet, Interval: time.Minute, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	lg.opts.afterTick = func(err error) { r.ticks <- err }
	// Each new log is a new owner: the epoch after the bucket's newest.
	epoch := uint64(7)
	if infos, _ := List(context.Background(), s, cell); len(infos) > 0 {
		epoch = infos[0].Epoch + 1
	}
	r.cl, err = lg.Open(context.Background(), openReq(cell, epoch, r.db, false))
	if err != nil {
		t.Fatal(err)
	}
	if r.cl.NeedsImage() == capture {
		t.Fatalf("NeedsImage = %v with capture %v", r.cl.NeedsImage(), capture)
	}
	t.Cleanup(func() { r.cl.Close(context.Background(), false) })
	return r
}

// commit makes one random commit and hands it over as the runtime does.
func (r *rig) commit(rnd *rand.Rand) {
	r.t.Helper()
	r.db.step(rnd)
	r.handOver()
}

func (r *rig) handOver() {
	r.t.Helper()
	r.seq++
	c := durability.Commit{Seq: r.seq}
	if r.cl.NeedsImage() {
		c.Image = r.db.image()
	} else {
		cs, _ := r.db.TakeCommits(context.Background())
		c.Pages = &cs[0]
	}
	d := r.cl.Append(c)
	select {
	case <-d.Done():
	default:
		r.t.Fatal("a backup must acknowledge at once")
	}
	if err := d.Err(); err != nil {
		r.t.Fatal(err)
	}
}

// tick advances the clock one interval and waits for that save's outcome.
func (r *rig) tick() error {
	r.t.Helper()
	r.clk.Advance(time.Minute)
	select {
	case err := <-r.ticks:
		return err
	case <-time.After(10 * time.Second):
		r.t.Fatal("no periodic save after one interval")
		return nil
	}
}

func (r *rig) count() int {
	r.t.Helper()
	infos, err := List(context.Background(), r.store, cell)
	if err != nil {
		r.t.Fatal(err)
	}
	return len(infos)
}

func (r *rig) mustRestore(want []byte) {
	r.t.Helper()
	got, err := RestoreImage(context.Background(), r.store, cell)
	if err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		r.t.Fatalf("restored %d bytes, want %d (equal=false)", len(got), len(want))
	}
}

func TestPeriodicSavesOnlyWhenChanged(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			r := newRig(t, memstore.New(), capture, 100)
			rnd := rand.New(rand.NewPCG(1, 2))
			if err := r.tick(); err != nil || r.count() != 0 {
				t.Fatalf("an unchanged cell was saved: err=%v count=%d", err, r.count())
			}
			for round := 1; round <= 20; round++ {
				for range rnd.IntN(4) + 1 {
					r.commit(rnd)
				}
				if err := r.tick(); err != nil {
					t.Fatal(err)
				}
				if r.count() != round {
					t.Fatalf("round %d: %d backups", round, r.count())
				}
				r.mustRestore(r.db.image())
				if err := r.tick(); err != nil || r.count() != round {
					t.Fatalf("round %d: unchanged cell saved again (err=%v, %d backups)", round, err, r.count())
				}
			}
		})
	}
}

func TestCloseSavesCrashDoesNot(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			ctx := context.Background()
			s := memstore.New()
			rnd := rand.New(rand.NewPCG(3, 4))

			crash := newRig(t, s, capture, 3)
			crash.commit(rnd)
			if err := crash.tick(); err != nil {
				t.Fatal(err)
			}
			saved := crash.db.image()
			crash.commit(rnd) // acknowledged, never saved: the RPO
			if err := crash.cl.Close(ctx, false); err != nil {
				t.Fatal(err)
			}
			crash.mustRestore(saved)
			if d := crash.cl.Append(durability.Commit{Seq: 99, Image: saved}); !errors.Is(d.Err(), ErrClosed) {
				t.Fatalf("Append after Close: %v", d.Err())
			}

			orderly := newRig(t, s, capture, 3)
			for range 5 {
				orderly.commit(rnd)
			}
			if err := orderly.cl.Close(ctx, true); err != nil {
				t.Fatal(err)
			}
			orderly.mustRestore(orderly.db.image())
		})
	}
}

func TestCloseWithoutChangesSavesNothing(t *testing.T) {
	r := newRig(t, memstore.New(), false, 3)
	if err := r.cl.Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if n := r.count(); n != 0 {
		t.Fatalf("%d backups of an unchanged cell", n)
	}
}

func TestKeepsNewestAndRestoresNewestEpoch(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rnd := rand.New(rand.NewPCG(5, 6))
	r := newRig(t, s, true, 2)
	for range 6 {
		r.commit(rnd)
		if err := r.tick(); err != nil {
			t.Fatal(err)
		}
	}
	infos, _ := List(ctx, s, cell)
	if len(infos) != 2 || infos[0].Seq != 6 || infos[1].Seq != 5 {
		t.Fatalf("kept %+v, want seqs 6 and 5", infos)
	}
	r.cl.Close(ctx, false)

	// A new owner (a higher epoch, fewer commits) restores, writes, and its
	// backup wins although its sequence numbers start again.
	lg, _ := New(Options{Store: s, Logger: quiet, Keep: 2})
	db := newMemPages(256, false)
	cl, err := lg.Open(ctx, openReq(cell, 8, db, true))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(db.image(), r.db.image()) {
		t.Fatal("Open(restore) did not restore the newest backup")
	}
	db.step(rnd)
	cl.Append(durability.Commit{Seq: 1, Image: db.image()})
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, s, cell)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epoch != 8 || res.Seq != 1 || !bytes.Equal(res.Image, db.image()) {
		t.Fatalf("restored epoch %d seq %d", res.Epoch, res.Seq)
	}
	if infos, _ := List(ctx, s, cell); len(infos) != 2 {
		t.Fatalf("%d backups kept, want 2", len(infos))
	}
}

func TestRestoreErrors(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if _, err := Restore(ctx, s, cell); !errors.Is(err, ErrNothingToRestore) {
		t.Fatalf("empty bucket: %v", err)
	}
	lg, _ := New(Options{Store: s, Logger: quiet})
	db := newMemPages(256, false)
	if _, err := lg.Open(ctx, openReq(cell, 1, db, true)); err != nil {
		t.Fatalf("Open(restore) on an empty bucket: %v", err)
	}
	// A stray object under the prefix is not a backup.
	s.Put(ctx, Prefix(cell)+"e1/notes.txt", []byte("x"), store.PutOptions{})
	if _, err := Restore(ctx, s, cell); !errors.Is(err, ErrNothingToRestore) {
		t.Fatalf("stray object: %v", err)
	}
	// Bytes that do not match their checksum are refused.
	s.Put(ctx, Key(cell, 1, 1), []byte("tampered"), store.PutOptions{Metadata: map[string]string{metaSHA256: fmt.Sprintf("%064x", 0)}})
	var ce *CorruptError
	if _, err := Restore(ctx, s, cell); !errors.As(err, &ce) || ce.Key != Key(cell, 1, 1) {
		t.Fatalf("tampered backup: %v", err)
	}
	if _, err := lg.Open(ctx, openReq(cell, 2, db, true)); !errors.As(err, &ce) {
		t.Fatalf("Open(restore) of a tampered backup: %v", err)
	}
}

// flaky fails Puts while down is set.
type flaky struct {
	store.Store
	down atomic.Bool
}

func (f *flaky) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if f.down.Load() {
		return "", errors.New("bucket unreachable")
	}
	return f.Store.Put(ctx, key, data, opts)
}

func TestFailedSaveIsRetried(t *testing.T) {
	s := &flaky{Store: memstore.New()}
	r := newRig(t, s, false, 3)
	rnd := rand.New(rand.NewPCG(7, 8))
	r.commit(rnd)
	s.down.Store(true)
	if err := r.tick(); err == nil {
		t.Fatal("a save to an unreachable bucket succeeded")
	}
	s.down.Store(false)
	if err := r.tick(); err != nil {
		t.Fatal(err)
	}
	r.mustRestore(r.db.image())

	r.commit(rnd)
	s.down.Store(true)
	if err := r.cl.Close(context.Background(), true); err == nil {
		t.Fatal("Close(final) hid a failed last save")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no store accepted")
	}
	if _, err := New(Options{Store: memstore.New(), Keep: -1}); err == nil {
		t.Fatal("negative Keep accepted")
	}
}

func TestParseKey(t *testing.T) {
	for _, k := range []string{Key(cell, 0, 0), Key(cell, 12, 1<<40)} {
		if _, ok := parseKey(cell, k); !ok {
			t.Errorf("%s not parsed", k)
		}
	}
	for _, k := range []string{
		Prefix(cell) + "e01/0000000000000001.db",
		Prefix(cell) + "e1/1.db",
		Prefix(cell) + "e1/000000000000000G.db",
		Prefix(cell) + "x1/0000000000000001.db",
		Prefix(cell) + "e1/0000000000000001.db/x",
		"cells/Other:1/backup/e1/0000000000000001.db",
	} {
		if _, ok := parseKey(cell, k); ok {
			t.Errorf("%s parsed", k)
		}
	}
}

// gated holds each Put until it is let through.
type gated struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Store.Put(ctx, key, data, opts)
}

// A commit made while a save is uploading must not change the bytes being
// saved: the save holds the image of its own commit.
func TestCommitDuringSaveKeepsSavedImage(t *testing.T) {
	s := &gated{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	r := newRig(t, s, true, 3)
	rnd := rand.New(rand.NewPCG(9, 10))
	for range 3 {
		r.commit(rnd)
	}
	want := r.db.image()
	r.clk.Advance(time.Minute)
	<-s.entered
	for range 5 {
		r.db.rewrite(rnd)
		r.handOver()
	}
	close(s.release)
	if err := <-r.ticks; err != nil {
		t.Fatal(err)
	}
	r.mustRestore(want)
	go func() {
		for range s.entered {
		}
	}()
	if err := r.cl.Close(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	r.mustRestore(r.db.image())
}

func FuzzParseKey(f *testing.F) {
	f.Add(Key(cell, 3, 42))
	f.Add(Prefix(cell) + "e1/zz.db")
	f.Fuzz(func(t *testing.T, key string) {
		in, ok := parseKey(cell, key)
		if ok && Key(cell, in.Epoch, in.Seq) != key {
			t.Fatalf("%q parsed as epoch %d seq %d, which names %q", key, in.Epoch, in.Seq, Key(cell, in.Epoch, in.Seq))
		}
	})
}

// silent never answers a Put until its context ends.
type silent struct{ store.Store }

func (s silent) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// A bucket that stops answering fails the periodic save, which is retried,
// instead of stopping the saves.
func TestSaveTimeout(t *testing.T) {
	r := &rig{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), store: memstore.New(), db: newMemPages(256, false), ticks: make(chan error, 16)}
	lg, _ := New(Options{Store: silent{r.store}, Clock: r.clk, Logger: quiet, SaveTimeout: 20 * time.Millisecond})
	lg.opts.afterTick = func(err error) { r.ticks <- err }
	var err error
	if r.cl, err = lg.Open(context.Background(), openReq(cell, 1, r.db, false)); err != nil {
		t.Fatal(err)
	}
	defer r.cl.Close(context.Background(), false)
	r.commit(rand.New(rand.NewPCG(11, 12)))
	for range 2 {
		if err := r.tick(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("save to a silent bucket: %v", err)
		}
	}
}
