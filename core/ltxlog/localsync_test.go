package ltxlog

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// heldStore holds every level-0 upload until the test lets it go.
type heldStore struct {
	store.Store
	entered chan struct{}
	gate    chan struct{}
	uploads atomic.Int64
}

func (s *heldStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if strings.Contains(key, "/0000/") {
		s.uploads.Add(1)
		s.entered <- struct{}{}
		<-s.gate
	}
	return s.Store.Put(ctx, key, data, opts)
}

// localSyncs is the test double of OpenRequest.SyncLocal: it counts the
// syncs and holds each until the test lets it go.
type localSyncs struct {
	n       atomic.Int64
	entered chan struct{}
	gate    chan struct{}
}

func (l *localSyncs) sync() error {
	l.n.Add(1)
	l.entered <- struct{}{}
	<-l.gate
	return nil
}

// TestLocalPrimarySyncsOncePerGroupCommit: in local-primary mode the log
// syncs the local database once per group commit, while that group's
// upload is in flight, and acknowledges the group only once both are done.
// 32 callers' commits queued behind a held upload cost one upload and one
// sync, not 32 syncs.
func TestLocalPrimarySyncsOncePerGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := &heldStore{Store: memstore.New(), entered: make(chan struct{}), gate: make(chan struct{})}
	ls := &localSyncs{entered: make(chan struct{}), gate: make(chan struct{})}
	lg, _ := New(Options{Logger: quiet, Store: s, CompactAfter: 1000})
	d := newPageDB(512, true)
	req := openReq(cell, 1, d, false)
	req.SyncLocal = ls.sync
	cl, err := lg.Open(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 1))
	d.mutate(r)
	first := appendCommit(t, cl, d, 1)
	// The first group's upload and its sync run at the same time: each
	// is entered before the other is let go.
	enter(t, s.entered, "the first upload")
	enter(t, ls.entered, "the first group's local sync (while its upload is held)")

	// 32 callers commit while that group is held; the runtime hands the
	// log its commits one at a time, in commit order.
	const callers = 32
	var mu sync.Mutex
	var wg sync.WaitGroup
	seq := uint64(1)
	later := make([]durability.Durable, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			d.mutate(r)
			seq++
			later[i] = appendCommit(t, cl, d, seq)
		}()
	}
	wg.Wait()

	// The upload finishes first; the group is not acknowledged while its
	// sync is still running.
	s.gate <- struct{}{}
	select {
	case <-first.Done():
		t.Fatal("the first commit was acknowledged before its local sync returned")
	default:
	}
	ls.gate <- struct{}{}
	if err := wait(t, first); err != nil {
		t.Fatal(err)
	}
	// The 32 commits go up as one group, with one sync beside it.
	enter(t, s.entered, "the second upload")
	enter(t, ls.entered, "the second group's local sync")
	s.gate <- struct{}{}
	ls.gate <- struct{}{}
	for _, dur := range later {
		if err := wait(t, dur); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if up, syncs := s.uploads.Load(), ls.n.Load(); up != 2 || syncs != up {
		t.Fatalf("%d commits made %d uploads and %d local syncs, want 2 and 2 (one sync per group commit)", callers+1, up, syncs)
	}
}

// enter waits for a held call to start; one that never starts fails the
// test (a log that does not sync) instead of hanging it.
func enter(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never started", what)
	}
}

// TestLocalSyncFailureFailsItsGroup: a group whose upload succeeded but
// whose local sync failed is not acknowledged, nor is any later commit
// (the cell resets, as after a failed upload).
func TestLocalSyncFailureFailsItsGroup(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	lg, _ := New(Options{Logger: quiet, Store: s})
	d := newPageDB(512, true)
	req := openReq(cell, 1, d, false)
	diskGone := errors.New("fsync: input/output error")
	req.SyncLocal = func() error { return diskGone }
	cl, err := lg.Open(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 1))
	d.mutate(r)
	if err := wait(t, appendCommit(t, cl, d, 1)); !errors.Is(err, diskGone) {
		t.Fatalf("a commit whose local sync failed resolved with %v, want the sync's error", err)
	}
	if keys := listKeys(t, s, ltx.EpochPrefix(cell, 1)); len(keys) != 1 {
		t.Fatalf("the upload itself should have gone up (it ran beside the sync): %v", keys)
	}
	d.mutate(r)
	if err := wait(t, appendCommit(t, cl, d, 2)); err == nil {
		t.Fatal("a commit after a failed local sync was acknowledged")
	}
	cl.Close(ctx, false)
}
