package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// nodeRecord is a node's record with an open log in a store, and the
// Confirmer over it (core/fleet's part, reduced to what the log relies on).
type nodeRecord struct {
	s      store.Store
	node   string
	gen    string
	mu     sync.Mutex
	fenced chan struct{}
	why    string
	// hold, when set, holds every read until it is closed; failing reads
	// fail while it is above 0 (counting down).
	hold    chan struct{}
	failing int
}

func newNodeRecord(t testing.TB, s store.Store, node string) *nodeRecord {
	r := &nodeRecord{s: s, node: node, gen: strings.Repeat("ab", 32), fenced: make(chan struct{})}
	l := layout.NodeLease{Node: node, ExpiresMs: 1 << 62, OwnershipIndexGeneration: r.gen, Log: layout.OpenNodeLog(1)}
	if _, err := s.Put(context.Background(), layout.NodeKey(node), l.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *nodeRecord) ConfirmLog(ctx context.Context) error {
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	r.mu.Lock()
	if r.failing > 0 {
		r.failing--
		r.mu.Unlock()
		return errors.New("node record read failed")
	}
	r.mu.Unlock()
	obj, err := r.s.Get(ctx, layout.NodeKey(r.node))
	if err != nil {
		return err
	}
	l, err := layout.DecodeNodeLease(layout.NodeKey(r.node), obj.Data)
	if err != nil {
		return err
	}
	if l.Log == nil || l.Log.State != layout.NodeLogOpen {
		r.Fence("log closed")
		return errors.New("fenced")
	}
	return nil
}

func (r *nodeRecord) Fence(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.fenced:
	default:
		r.why = why
		close(r.fenced)
	}
}

func (r *nodeRecord) Fenced() <-chan struct{} { return r.fenced }

func newNodeLog(t testing.TB, s store.Store, r *nodeRecord, opts nodelog.Options) *nodelog.Log {
	t.Helper()
	opts.Store, opts.Node, opts.Generation, opts.Confirmer, opts.Logger = s, r.node, r.gen, r, quiet
	nl, err := nodelog.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close(context.Background(), false) })
	return nl
}

func own(t testing.TB, s store.Store, cell, node string, epoch uint64) {
	t.Helper()
	rec := layout.OwnRecord{Node: node, Epoch: epoch}
	if _, err := s.Put(context.Background(), layout.OwnKey(cell), rec.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// With a node log every acknowledged commit restores — through the
// overlay of the owner's bundles while the cell is open, from the cell's
// prefix alone once it closed — and the prefix grows by merged files, not
// one per commit; once every row is tiered, the bundles are gone.
func TestNodeLogRestoresEveryAcknowledgedCommit(t *testing.T) {
	for _, capture := range []bool{true, false} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			ctx := context.Background()
			s := memstore.New()
			rec := newNodeRecord(t, s, "node_a")
			own(t, s, cell, "node_a", 3)
			nl := newNodeLog(t, s, rec, nodelog.Options{})
			lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: 5, NodeLog: nl, TierAfterRows: 8, Retention: -1})
			d := newPageDB(512, capture)
			var conn driver.Conn = d
			if !capture {
				conn = imageOnly{d}
			}
			cl, err := lg.Open(ctx, openReq(cell, 3, conn, false))
			if err != nil {
				t.Fatal(err)
			}
			if !durability.ProvesOwnership(cl) {
				t.Fatal("a cell log on a node log does not prove ownership")
			}
			r := rand.New(rand.NewPCG(7, 1))
			var want []byte
			for i := 1; i <= 30; i++ {
				d.mutate(r)
				want = d.image()
				if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
					t.Fatal(err)
				}
				res, err := Restore(ctx, s, cell, WithOverlay(s, cell, RestoreOptions{}))
				if err != nil {
					t.Fatalf("commit %d: %v", i, err)
				}
				if res.TXID != ltx.TXID(i) || !bytes.Equal(res.Image, want) {
					t.Fatalf("commit %d: restored TXID %d, image equal=%v", i, res.TXID, bytes.Equal(res.Image, want))
				}
			}
			if err := cl.Close(ctx, true); err != nil {
				t.Fatal(err)
			}
			res, err := Restore(ctx, s, cell, RestoreOptions{})
			if err != nil || res.TXID != 30 || !bytes.Equal(res.Image, want) {
				t.Fatalf("after close, from the prefix alone: TXID %v, %v", res, err)
			}
			page, _ := store.ListAll(ctx, s, store.ListOptions{Prefix: ltx.EpochPrefix(cell, 3)})
			if n := len(page.Objects); n > 8 {
				t.Errorf("%d files in the cell's prefix for 30 commits tiered 8 at a time", n)
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				bs, _ := nodelog.ListBundles(ctx, s, "node_a", rec.gen)
				if len(bs) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d bundles left once every row is tiered", len(bs))
				}
			}
		})
	}
}

// A reset (a close that is not final) still tiers every credited row
// before it returns: the record is released after Close, and a node that
// takes a released cell reads its prefix alone.
func TestNodeLogResetTiersCreditedRows(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rec := newNodeRecord(t, s, "node_a")
	nl := newNodeLog(t, s, rec, nodelog.Options{TierAge: time.Hour})
	lg, _ := New(Options{Logger: quiet, Store: s, NodeLog: nl})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 2, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	var want []byte
	for i := 1; i <= 5; i++ {
		d.mutate(r)
		want = d.image()
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := nodelog.Covered(ctx, s, cell, 2); got != 1 {
		t.Fatalf("prefix covers TXID %d before the reset, want only the snapshot", got)
	}
	cl.Close(ctx, false)
	res, err := Restore(ctx, s, cell, RestoreOptions{})
	if err != nil || res.TXID != 5 || !bytes.Equal(res.Image, want) {
		t.Fatalf("after a reset, from the prefix alone: %v, %v", res, err)
	}
}

// A close whose tiering fails fences the node: the cell's record must not
// be released over a prefix that lacks acknowledged rows.
func TestNodeLogCloseFencesWhenTieringFails(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	fs := faultstore.New(mem, faultstore.Config{})
	rec := newNodeRecord(t, mem, "node_a")
	nl := newNodeLog(t, fs, rec, nodelog.Options{TierAge: time.Hour})
	lg, _ := New(Options{Logger: quiet, Store: fs, NodeLog: nl, UploadRetries: 1, RetryDelay: time.Millisecond, Retention: -1})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 2, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 1; i <= 3; i++ {
		d.mutate(r)
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: ltx.Key(cell, 2, 0, 2, 3), Fault: faultstore.Fail, Times: -1})
	cl.Close(ctx, true)
	select {
	case <-rec.Fenced():
	default:
		t.Fatal("the node did not fence when a closing cell could not tier its rows")
	}
	if bs, _ := nodelog.ListBundles(ctx, mem, "node_a", rec.gen); len(bs) == 0 {
		t.Fatal("the bundles holding the untiered rows were deleted")
	}
}

// A busy cell's next group goes into the next bundle while the previous
// group's credit read is still out: the uploads overlap the reads, and
// the groups are acknowledged in order once the reads come back.
func TestNodeLogOverlapsUploadsWithCreditReads(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rec := newNodeRecord(t, s, "node_a")
	nl := newNodeLog(t, s, rec, nodelog.Options{TierAge: time.Hour})
	lg, _ := New(Options{Logger: quiet, Store: s, NodeLog: nl})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 2, d, false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, true)
	r := rand.New(rand.NewPCG(5, 5))
	d.mutate(r)
	if err := wait(t, appendCommit(t, cl, d, 1)); err != nil { // the snapshot
		t.Fatal(err)
	}
	release := make(chan struct{})
	rec.mu.Lock()
	rec.hold = release
	rec.mu.Unlock()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before the deferred Close, which waits for the credits
	var futures []durability.Durable
	for i := 2; i <= 4; i++ {
		d.mutate(r)
		futures = append(futures, appendCommit(t, cl, d, uint64(i)))
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			bs, _ := nodelog.ListBundles(ctx, s, "node_a", rec.gen)
			if len(bs) >= i-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("commit %d: no bundle of its own while the credit read of the one before is held (%d bundles)", i, len(bs))
			}
		}
	}
	for _, f := range futures {
		select {
		case <-f.Done():
			t.Fatal("a commit was acknowledged before its credit read returned")
		default:
		}
	}
	free()
	for i, f := range futures {
		if err := wait(t, f); err != nil {
			t.Fatalf("commit %d: %v", i+2, err)
		}
	}
}

// A group whose credit read failed is not acknowledged, nor is any group
// after it, even one whose own bundle was stored before the failure was
// known and whose read succeeded: its rows are never tiered, so the
// cell's prefix never gets a row after a missing one (a regression: they
// were tiered, leaving a gap no restore could cross).
func TestNodeLogFailedCreditFailsLaterGroups(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rec := newNodeRecord(t, s, "node_a")
	nl := newNodeLog(t, s, rec, nodelog.Options{TierAge: time.Hour})
	lg, _ := New(Options{Logger: quiet, Store: s, NodeLog: nl, TierAfterRows: 1})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, 2, d, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(6, 6))
	d.mutate(r)
	if err := wait(t, appendCommit(t, cl, d, 1)); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	rec.mu.Lock()
	rec.hold, rec.failing = release, 3 // every attempt of the next read fails
	rec.mu.Unlock()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	d.mutate(r)
	second := appendCommit(t, cl, d, 2)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if bs, _ := nodelog.ListBundles(ctx, s, "node_a", rec.gen); len(bs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no bundle for the second commit")
		}
	}
	d.mutate(r)
	third := appendCommit(t, cl, d, 3)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if bs, _ := nodelog.ListBundles(ctx, s, "node_a", rec.gen); len(bs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no bundle for the third commit while the second's read is out")
		}
	}
	free()
	if err := wait(t, second); err == nil {
		t.Fatal("a group whose credit read failed was acknowledged")
	}
	if err := wait(t, third); err == nil {
		t.Fatal("a group after one whose credit failed was acknowledged")
	}
	cl.Close(ctx, false)
	if got, _ := nodelog.Covered(ctx, s, cell, 2); got != 1 {
		t.Fatalf("the prefix covers TXID %d: rows after a failed credit were tiered", got)
	}
	if _, err := Restore(ctx, s, cell, RestoreOptions{}); err != nil {
		t.Fatalf("the prefix no longer restores: %v", err)
	}
}
