package wake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// pauseAt holds the nth call of one kind (a List of prefix, or a Put of
// key) until release is closed, after closing reached: a way to run two
// starters in one exact interleaving.
type pauseAt struct {
	store.Store
	op, key string // op is "list" or "put"
	nth     int32
	seen    atomic.Int32
	reached chan struct{}
	release chan struct{}
}

func newPauseAt(s store.Store, op, key string, nth int32) *pauseAt {
	return &pauseAt{Store: s, op: op, key: key, nth: nth, reached: make(chan struct{}), release: make(chan struct{})}
}

func (p *pauseAt) hold(op, key string) {
	if op == p.op && key == p.key && p.seen.Add(1) == p.nth {
		close(p.reached)
		<-p.release
	}
}

func (p *pauseAt) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	p.hold("list", opts.Prefix)
	return p.Store.List(ctx, opts)
}

func (p *pauseAt) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	p.hold("put", key)
	return p.Store.Put(ctx, key, data, opts)
}

// startNode is what `cellb serve` does on a fleet bucket: prepare the wake
// index, then join.
func (f *fixture) startNode(s store.Store, name string) error {
	if err := Prepare(f.ctx, s, f.clk); err != nil {
		return fmt.Errorf("%s: Prepare: %w", name, err)
	}
	n, err := fleet.Join(f.ctx, fleet.Options{Store: s, Node: name, Clock: f.clk, Logger: quietLogger})
	if err != nil {
		return fmt.Errorf("%s: Join: %w", name, err)
	}
	f.t.Cleanup(n.Kill)
	return nil
}

func (f *fixture) requireReady() {
	f.t.Helper()
	obj, err := f.s.Get(f.ctx, layout.WakeFormatKey)
	if err != nil || string(obj.Data) != string(FormatRecord{Format: Format}.Encode()) {
		f.t.Fatalf("format marker %q, %v; want the final marker", describeObject(obj), err)
	}
}

func describeObject(o *store.Object) string {
	if o == nil {
		return "<none>"
	}
	return string(o.Data)
}

// TestPrepareWhileAnotherStarterJoins runs two starters of one fleet in the
// interleavings where the second one finds the first one's node lease live:
// the first starter made the index ready and joined in between, so the
// second must go on, not stop with "nodes are live".
func TestPrepareWhileAnotherStarterJoins(t *testing.T) {
	t.Run("before creating the marker", func(t *testing.T) {
		f := newFixture(t)
		f.own(cellA, "gone", 1)
		b := newPauseAt(f.s, "list", "nodes/", 1) // b's check before it creates the marker
		errB := make(chan error, 1)
		go func() { errB <- f.startNode(b, "node_b") }()
		<-b.reached
		if err := f.startNode(f.s, "node_a"); err != nil {
			t.Fatal(err)
		}
		close(b.release)
		if err := <-errB; err != nil {
			t.Fatalf("the second starter: %v", err)
		}
		f.requireReady()
	})
	t.Run("after seeding a migration the first starter finished", func(t *testing.T) {
		f := newFixture(t)
		f.own(cellA, "gone", 1)
		a := newPauseAt(f.s, "put", layout.WakeFormatKey, 2) // a's swap to the final marker
		b := newPauseAt(f.s, "list", "nodes/", 2)            // b's check after its seeds
		errA, errB := make(chan error, 1), make(chan error, 1)
		go func() { errA <- f.startNode(a, "node_a") }()
		<-a.reached // a holds {"format":2,"migrating":true}
		go func() { errB <- f.startNode(b, "node_b") }()
		<-b.reached // b resumed the migration and seeded
		close(a.release)
		if err := <-errA; err != nil {
			t.Fatal(err)
		}
		close(b.release)
		if err := <-errB; err != nil {
			t.Fatalf("the second starter: %v", err)
		}
		f.requireReady()
	})
	t.Run("a live node that is not a starter still blocks", func(t *testing.T) {
		// The marker does not move while b looks: the live lease is a node
		// that never prepared the index (an older build), so b must refuse.
		f := newFixture(t)
		f.lease("old", t0.Add(time.Hour))
		var live *LiveNodesError
		if err := f.startNode(f.s, "node_b"); !errors.As(err, &live) {
			t.Fatalf("started under a live node that did not prepare the index: %v", err)
		}
		if _, err := f.s.Get(f.ctx, layout.WakeFormatKey); !store.IsNotFound(err) {
			t.Fatal("a refused initialization wrote the marker")
		}
	})
}

// TestFleetStartsAllAtOnce starts several nodes at the same moment on a
// fresh bucket (with cells from before the wake index), as the replicas of
// a deployment start, many times over: every one of them must start.
func TestFleetStartsAllAtOnce(t *testing.T) {
	const nodes, rounds = 5, 40
	for round := range rounds {
		f := newFixture(t)
		f.s = memstore.New()
		f.own(cellA, "gone", 1)
		f.own(cellB, "gone", 2)
		start := make(chan struct{})
		errs := make([]error, nodes)
		var wg sync.WaitGroup
		for i := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = f.startNode(f.s, fmt.Sprintf("node_%d", i))
			}()
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		f.requireReady()
	}
}

// ignoresIfNoneMatch is a bucket that applies create-only writes
// unconditionally, and records every key written.
type ignoresIfNoneMatch struct {
	store.Store
	mu      sync.Mutex
	written []string
}

func (b *ignoresIfNoneMatch) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	b.mu.Lock()
	b.written = append(b.written, key)
	b.mu.Unlock()
	if opts.Condition.Kind == store.CreateOnly {
		opts.Condition = store.Condition{}
	}
	return b.Store.Put(ctx, key, data, opts)
}

// TestPrepareProbesBeforeWriting: a starter that would initialize or resume
// the index on a bucket that ignores create-only writes stops with the
// probe's error and writes nothing but the probe's key; on a ready bucket
// Prepare writes nothing, so it does not probe (Join does).
func TestPrepareProbesBeforeWriting(t *testing.T) {
	for name, marker := range map[string][]byte{
		"fresh":     nil,
		"migrating": FormatRecord{Format: Format, Migrating: true}.Encode(),
		"ready":     FormatRecord{Format: Format}.Encode(),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.own(cellA, "gone", 1)
			if marker != nil {
				f.s.Put(f.ctx, layout.WakeFormatKey, marker, store.PutOptions{})
			}
			before := f.keys("")
			b := &ignoresIfNoneMatch{Store: f.s}
			err := Prepare(f.ctx, b, f.clk)
			if name == "ready" {
				if err != nil || len(b.written) != 0 {
					t.Fatalf("Prepare on a ready bucket: %v, wrote %v", err, b.written)
				}
				return
			}
			var pe *store.ProbeError
			if !errors.As(err, &pe) || pe.Step != store.ProbeRecreate || err.Error() != pe.Error() {
				t.Fatalf("Prepare: %v, want the probe's own *store.ProbeError at step %v", err, store.ProbeRecreate)
			}
			for _, k := range b.written {
				if k != pe.Key {
					t.Fatalf("wrote %s to a bucket that failed the probe", k)
				}
			}
			if after := f.keys(""); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("bucket %v after a refused Prepare, want %v", after, before)
			}
		})
	}
}
