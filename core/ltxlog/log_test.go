package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

const cell = "Counter:0123abcd"

// appendCommit hands d's latest commit to the log as the runtime would.
func appendCommit(t testing.TB, cl durability.CellLog, d *pageDB, seq uint64) durability.Durable {
	t.Helper()
	if cl.NeedsImage() {
		return cl.Append(durability.Commit{Seq: seq, Image: d.image()})
	}
	commits, _ := d.TakeCommits(context.Background())
	if len(commits) != 1 {
		t.Fatalf("%d captured commits", len(commits))
	}
	return cl.Append(durability.Commit{Seq: seq, Pages: &commits[0]})
}

func wait(t testing.TB, d durability.Durable) error {
	t.Helper()
	select {
	case <-d.Done():
		return d.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("durability never resolved")
		return nil
	}
}

func TestLogRestoresEveryAcknowledgedCommit(t *testing.T) {
	for _, capture := range []bool{true, false} {
		for seed := uint64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("capture=%v/seed=%d", capture, seed), func(t *testing.T) {
				ctx := context.Background()
				s := memstore.New()
				lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: 5, Retention: -1})
				d := newPageDB(512, capture)
				var conn driver.Conn = d
				if !capture {
					conn = imageOnly{d}
				}
				cl, err := lg.Open(ctx, openReq(cell, 3, conn, false))
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(seed, 1))
				for i := 1; i <= 40; i++ {
					d.mutate(r)
					want := d.image()
					if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
						t.Fatal(err)
					}
					res, err := Restore(ctx, s, cell, RestoreOptions{})
					if err != nil {
						t.Fatalf("commit %d: %v", i, err)
					}
					if res.TXID != ltx.TXID(i) || !bytes.Equal(res.Image, want) {
						t.Fatalf("commit %d: restored TXID %d, image equal=%v", i, res.TXID, bytes.Equal(res.Image, want))
					}
					// The same restore written straight to a file.
					f, err := os.CreateTemp(t.TempDir(), "img")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := RestoreTo(ctx, s, cell, RestoreOptions{}, f); err != nil {
						t.Fatalf("commit %d: RestoreTo: %v", i, err)
					}
					f.Close()
					if got, _ := os.ReadFile(f.Name()); !bytes.Equal(got, want) {
						t.Fatalf("commit %d: file restore differs (%d bytes, want %d)", i, len(got), len(want))
					}
				}
				if err := cl.Close(ctx, true); err != nil {
					t.Fatal(err)
				}
				// Compaction kept the chain short.
				page, _ := store.ListAll(ctx, s, store.ListOptions{Prefix: ltx.EpochPrefix(cell, 3)})
				if len(page.Objects) > 6 {
					t.Errorf("%d files after compaction, want at most 6", len(page.Objects))
				}
				for _, o := range page.Objects {
					if err := ltx.Verify(mustGet(t, s, o.Key)); err != nil {
						t.Errorf("%s: %v", o.Key, err)
					}
				}
			})
		}
	}
}

// Captured pages go back to the driver's pool once their file is encoded,
// and only then: the restores above read the pages' real bytes, not the
// poison a released buffer holds.
func TestCapturedPagesAreReleasedAfterUpload(t *testing.T) {
	ctx := context.Background()
	lg, _ := New(Options{Logger: quiet, Store: memstore.New()})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, true)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 1; i <= 5; i++ {
		d.mutate(r)
		commits, _ := d.TakeCommits(ctx)
		if len(commits) != 1 || len(commits[0].Pages) == 0 {
			t.Fatalf("%d captured commits", len(commits))
		}
		cc := &commits[0]
		if err := wait(t, cl.Append(durability.Commit{Seq: uint64(i), Pages: cc})); err != nil {
			t.Fatal(err)
		}
		if cc.Pages != nil || cc.Pool != nil {
			t.Fatalf("commit %d: durable, but its pages were never released", i)
		}
	}
}

func mustGet(t testing.TB, s store.Store, key string) []byte {
	o, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return o.Data
}

// TestGroupCommit: commits that arrive while an upload is in flight share
// the next file, and every one of them is acknowledged.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	fs := faultstore.New(memstore.New(), faultstore.Config{
		BeforeCall: func(ctx context.Context, c faultstore.Call) error {
			if c.Op == faultstore.OpPut {
				<-gate
			}
			return nil
		},
	})
	lg, _ := New(Options{Logger: quiet, Store: fs, CompactAfter: -1})
	d := newPageDB(1024, true)
	cl, err := lg.Open(ctx, openReq(cell, 1, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	var futures []durability.Durable
	for i := 1; i <= 50; i++ {
		d.mutate(r)
		futures = append(futures, appendCommit(t, cl, d, uint64(i)))
	}
	close(gate)
	for _, f := range futures {
		if err := wait(t, f); err != nil {
			t.Fatal(err)
		}
	}
	page, _ := store.ListAll(ctx, fs, store.ListOptions{Prefix: ltx.EpochPrefix(cell, 1)})
	if n := len(page.Objects); n >= 50 || n < 1 {
		t.Fatalf("%d files for 50 commits: no group commit", n)
	}
	if !strings.Contains(page.Objects[0].Key, "/0000/0000000000000001-") {
		t.Fatalf("first file %s does not start the chain at TXID 1", page.Objects[0].Key)
	}
	res, err := Restore(ctx, fs, cell, RestoreOptions{})
	if err != nil || res.TXID != 50 || !bytes.Equal(res.Image, d.image()) {
		t.Fatalf("restore: %v txid=%d", err, res.TXID)
	}
	_ = cl.Close(ctx, true)
}

// TestFailedUploadBreaksTheChainOfAcknowledgements: once an upload fails for
// good, that commit and every later one fail, and nothing after is sent.
func TestFailedUploadBreaksTheChainOfAcknowledgements(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	lg, _ := New(Options{Logger: quiet, Store: fs, UploadRetries: 2, RetryDelay: time.Millisecond})
	d := newPageDB(512, true)
	cl, _ := lg.Open(ctx, openReq(cell, 1, d, false))
	r := rand.New(rand.NewPCG(2, 2))
	d.mutate(r)
	if err := wait(t, appendCommit(t, cl, d, 1)); err != nil {
		t.Fatal(err)
	}
	key := ltx.Key(cell, 1, 0, 2, 2)
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: key, Fault: faultstore.Fail, Times: 3})
	d.mutate(r)
	err := wait(t, appendCommit(t, cl, d, 2))
	var ue *UploadError
	if !errors.As(err, &ue) || ue.Key != key {
		t.Fatalf("err = %v", err)
	}
	d.mutate(r)
	if err := wait(t, appendCommit(t, cl, d, 3)); err == nil {
		t.Fatal("a commit after a failed upload was acknowledged")
	}
	if err := cl.Close(ctx, true); err == nil {
		t.Fatal("Close(final) hid the failure")
	}
}

// TestFaultyBucketNeverLosesAcknowledgedCommits drives the log through a
// bucket that fails, drops and loses responses at random; each time the log
// breaks, a new epoch restores and continues. Every acknowledged commit must
// survive; an unacknowledged one may or may not.
func TestFaultyBucketNeverLosesAcknowledgedCommits(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		ctx := context.Background()
		mem := memstore.New()
		fs := faultstore.New(mem, faultstore.Config{Seed: seed, PerOp: map[faultstore.Op]faultstore.Faults{
			faultstore.OpPut: {Fail: 0.15, Drop: 0.1, LoseResponse: 0.1},
		}})
		lg, _ := New(Options{Logger: quiet, Store: fs, UploadRetries: 1, RetryDelay: time.Microsecond, CompactAfter: 4})
		r := rand.New(rand.NewPCG(seed, 3))
		var history [][]byte // image after each commit of the current lineage
		acked := -1          // index into history of the newest acknowledged commit
		d := newPageDB(512, true)
		for epoch := uint64(1); epoch <= 6; epoch++ {
			fresh := newPageDB(512, true)
			cl, err := lg.Open(ctx, openReq(cell, epoch, fresh, true))
			if err != nil {
				continue // the restore's reads did not fail; a put-only fault cannot get here
			}
			if acked >= 0 {
				got := fresh.image()
				found := -1
				for i := acked; i < len(history); i++ {
					if bytes.Equal(history[i], got) {
						found = i
					}
				}
				if found < 0 {
					t.Fatalf("seed %d epoch %d: restored image is none of the states at or after the last acknowledged commit", seed, epoch)
				}
				history = history[:found+1]
			}
			d = fresh
			for i := 0; i < 12; i++ {
				d.mutate(r)
				history = append(history, d.image())
				if err := wait(t, appendCommit(t, cl, d, uint64(i+1))); err != nil {
					break
				}
				acked = len(history) - 1
			}
			_ = cl.Close(ctx, false)
		}
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestHungBucketFailsTheCommit: a PUT that never answers fails the commit
// after the upload timeout instead of holding the reply forever.
func TestHungBucketFailsTheCommit(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), faultstore.Config{
		BeforeCall: func(ctx context.Context, c faultstore.Call) error {
			if c.Op == faultstore.OpPut {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		},
	})
	lg, _ := New(Options{Logger: quiet, Store: fs, UploadTimeout: 20 * time.Millisecond, UploadRetries: 1, RetryDelay: time.Millisecond})
	d := newPageDB(512, true)
	cl, _ := lg.Open(ctx, openReq(cell, 1, d, false))
	d.mutate(rand.New(rand.NewPCG(1, 1)))
	if err := wait(t, appendCommit(t, cl, d, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the upload deadline", err)
	}
	cl.Close(ctx, false)
}
