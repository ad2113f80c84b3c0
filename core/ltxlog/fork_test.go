package ltxlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

const forkDst = "Counter:fedcba98"

// bytesThrough counts the body bytes read and written through it, and the
// copies it forwards (store.Copier), so a test can tell a copy inside the
// bucket from one through the node.
type bytesThrough struct {
	store.Store
	read, written, copies atomic.Int64
}

func (b *bytesThrough) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := b.Store.Get(ctx, key)
	if err == nil {
		b.read.Add(int64(len(o.Data)))
	}
	return o, err
}

func (b *bytesThrough) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	b.written.Add(int64(len(data)))
	return b.Store.Put(ctx, key, data, opts)
}

func (b *bytesThrough) NewRangeReader(ctx context.Context, key string, off, n int64) (*store.Reader, error) {
	r, err := store.NewRangeReader(ctx, b.Store, key, off, n)
	if err == nil {
		b.read.Add(r.Length)
	}
	return r, err
}

func (b *bytesThrough) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return b.Put(ctx, key, data, opts)
}

func (b *bytesThrough) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	b.copies.Add(1)
	return store.Copy(ctx, b.Store, src, dst)
}

// writeChain commits n random changes to cell in epoch and returns the
// image after each (images[i] is the state after TXID i).
func writeChain(t *testing.T, s store.Store, epoch uint64, n int, compactAfter int) [][]byte {
	t.Helper()
	ctx := context.Background()
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: compactAfter})
	d := newPageDB(512, true)
	cl, err := lg.Open(ctx, openReq(cell, epoch, d, false))
	if err != nil {
		t.Fatal(err)
	}
	images := [][]byte{nil}
	r := rand.New(rand.NewPCG(7, 7))
	for i := 1; i <= n; i++ {
		d.mutate(r)
		images = append(images, d.image())
		if err := wait(t, appendCommit(t, cl, d, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	return images
}

// A fork copies the source's restore plan into the destination's epoch
// inside the bucket: no body byte is read or written through the node, the
// destination restores exactly the source's state, and the source is
// untouched. A bookmark forks the state it names.
func TestForkCopiesThePlanInsideTheBucket(t *testing.T) {
	ctx := context.Background()
	base := memstore.New()
	s := &bytesThrough{Store: base}
	images := writeChain(t, base, 3, 40, 5) // compacted: level-1 files and a level-0 tail
	res, err := Fork(ctx, s, durability.ForkRequest{Source: cell, Dest: forkDst, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.At != (durability.Bookmark{Epoch: 3, TXID: 40}) || res.Files == 0 || res.Copied != res.Files {
		t.Fatalf("fork result %+v, want the state 3/40 and every file copied in the bucket", res)
	}
	if got, want := s.read.Load()+s.written.Load(), int64(0); got != want || s.copies.Load() != int64(res.Files) {
		t.Fatalf("%d body bytes passed through the node and %d copies were made for %d files; want 0 bytes", got, s.copies.Load(), res.Files)
	}
	got, err := Restore(ctx, base, forkDst, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Epoch != 1 || got.TXID != 40 || !bytes.Equal(got.Image, images[40]) {
		t.Fatalf("the fork restores epoch %d TXID %d (image equal %v), want epoch 1 TXID 40", got.Epoch, got.TXID, bytes.Equal(got.Image, images[40]))
	}
	page, _ := store.ListAll(ctx, base, store.ListOptions{Prefix: ltx.CellPrefix(forkDst)})
	for _, o := range page.Objects {
		f, ok := ltx.ParseKey(o.Key)
		if !ok || f.Epoch != 1 {
			t.Errorf("the fork wrote %s, outside the destination's epoch 1", o.Key)
		}
	}
	if src, err := Restore(ctx, base, cell, RestoreOptions{}); err != nil || !bytes.Equal(src.Image, images[40]) {
		t.Fatalf("the source after the fork: %v", err)
	}

	// At a bookmark (a log without compaction keeps every state).
	base2 := memstore.New()
	images = writeChain(t, base2, 2, 12, -1)
	at := durability.Bookmark{Epoch: 2, TXID: 7}
	res, err = Fork(ctx, base2, durability.ForkRequest{Source: cell, Dest: forkDst, At: at, Epoch: 4})
	if err != nil || res.At != at {
		t.Fatalf("fork at %s: %+v, %v", at, res, err)
	}
	got, err = Restore(ctx, base2, forkDst, RestoreOptions{})
	if err != nil || got.TXID != 7 || !bytes.Equal(got.Image, images[7]) {
		t.Fatalf("the fork at %s restores TXID %v (%v)", at, got, err)
	}
	var nr *EpochNotRestorableError
	if _, err := Fork(ctx, base2, durability.ForkRequest{Source: cell, Dest: "Counter:00000001", At: durability.Bookmark{Epoch: 9, TXID: 1}, Epoch: 4}); !errors.As(err, &nr) {
		t.Fatalf("fork at a bookmark of an epoch the bucket does not hold: %v, want *EpochNotRestorableError", err)
	}
}

// The destination must hold nothing but its ownership record.
func TestForkRefusesAWrittenDestination(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	writeChain(t, s, 1, 3, -1)
	if _, err := s.Put(ctx, layout.OwnKey(forkDst), []byte(`{"node":"n","epoch":1}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Fork(ctx, s, durability.ForkRequest{Source: cell, Dest: forkDst, Epoch: 1}); err != nil {
		t.Fatalf("a destination holding only its ownership record: %v", err)
	}
	var written *durability.ForkDestinationWrittenError
	if _, err := Fork(ctx, s, durability.ForkRequest{Source: cell, Dest: forkDst, Epoch: 2}); !errors.As(err, &written) {
		t.Fatalf("fork into a destination with a log: %v, want *durability.ForkDestinationWrittenError", err)
	}
	if _, err := Fork(ctx, s, durability.ForkRequest{Source: cell, Dest: cell, Epoch: 2}); !errors.As(err, &written) {
		t.Fatalf("fork of a cell into itself: %v, want *durability.ForkDestinationWrittenError", err)
	}
	var nf *durability.NoForkError
	if _, err := Fork(ctx, s, durability.ForkRequest{Source: cell, Dest: "Counter:00000002", Epoch: 0}); !errors.As(err, &nf) {
		t.Fatalf("fork without an epoch: %v, want *durability.NoForkError", err)
	}
}

// A fork cut short leaves no chain from TXID 1 in the destination (its
// files are copied newest first), so the destination's next activation
// cannot restore an older state of the source as if it were the fork.
//
// A fork that fails and can clean up leaves nothing, so it can be tried
// again.
func TestAForkCutShortRestoresNothing(t *testing.T) {
	ctx := context.Background()
	base := memstore.New()
	writeChain(t, base, 1, 6, -1) // six level-0 files
	fs := faultstore.New(base, faultstore.Config{})
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: ltx.Key(forkDst, 1, 0, 3, 3), Fault: faultstore.Fail},
		// The node is gone before it can remove what it copied.
		faultstore.Rule{Op: faultstore.OpDelete, Fault: faultstore.Fail, Times: -1})
	if _, err := Fork(ctx, fs, durability.ForkRequest{Source: cell, Dest: forkDst, Epoch: 1}); err == nil {
		t.Fatal("the fork succeeded though a copy failed")
	}
	if res, err := Restore(ctx, base, forkDst, RestoreOptions{}); err == nil {
		t.Fatalf("a fork cut short restores TXID %d", res.TXID)
	}

	const again = "Counter:00000003"
	fs = faultstore.New(base, faultstore.Config{})
	fs.Script(faultstore.Rule{Op: faultstore.OpPut, Key: ltx.Key(again, 1, 0, 3, 3), Fault: faultstore.Fail})
	if _, err := Fork(ctx, fs, durability.ForkRequest{Source: cell, Dest: again, Epoch: 1}); err == nil {
		t.Fatal("the fork succeeded though a copy failed")
	}
	if page, _ := store.ListAll(ctx, base, store.ListOptions{Prefix: layout.CellPrefix(again)}); len(page.Objects) != 0 {
		t.Fatalf("a failed fork left %d objects behind", len(page.Objects))
	}
	if _, err := Fork(ctx, base, durability.ForkRequest{Source: cell, Dest: again, Epoch: 2}); err != nil {
		t.Fatalf("the fork tried again: %v", err)
	}
}

// In the fleet the destination is taken with ownership like any
// activation: its own.json names the forking node while the copy is
// written, another node cannot take it meanwhile, and after the release
// the next owner's epoch is above the copy's, so it restores the copy.
func TestForkUnderFleetOwnership(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	images := writeChain(t, s, 1, 5, -1)
	a, err := fleet.Join(ctx, fleet.Options{Store: s, Node: "node-a", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Kill()
	b, err := fleet.Join(ctx, fleet.Options{Store: s, Node: "node-b", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	g, err := a.TryAcquire(ctx, forkDst)
	if err != nil {
		t.Fatal(err)
	}
	var elsewhere *lease.CellOwnedElsewhereError
	if _, err := b.TryAcquire(ctx, forkDst); !errors.As(err, &elsewhere) {
		t.Fatalf("another node took the destination during the fork: %v", err)
	}
	res, err := Fork(ctx, s, durability.ForkRequest{Source: cell, Dest: forkDst, Epoch: g.Epoch()})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g2, err := b.TryAcquire(ctx, forkDst)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Epoch() <= g.Epoch() {
		t.Fatalf("the next owner's epoch %d is not above the fork's %d", g2.Epoch(), g.Epoch())
	}
	got, err := restoreFor(ctx, s, forkDst, RestoreOptions{}, g2.Epoch())
	if err != nil || got.TXID != 5 || !bytes.Equal(got.Image, images[5]) || got.Epoch != res.At.Epoch && got.Epoch != g.Epoch() {
		t.Fatalf("the next owner restores %+v, %v", got, err)
	}
}
