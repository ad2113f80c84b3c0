package wake

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/core/wakeport"
)

const (
	cellA = "Room:00000000000000000000000000000000000000000000000000000000000000aa"
	cellB = "Room:00000000000000000000000000000000000000000000000000000000000000bb"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t   *testing.T
	ctx context.Context
	s   store.Store
	clk *clock.Fake
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, ctx: context.Background(), s: memstore.New(), clk: clock.NewFake(t0)}
}

func (f *fixture) service(node string) *Service {
	f.t.Helper()
	svc, err := New(Options{Store: f.s, Node: node, Clock: f.clk, Tick: time.Second, PollInterval: time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	return svc
}

func (f *fixture) own(cellKey, node string, epoch uint64) {
	f.t.Helper()
	if _, err := f.s.Put(f.ctx, layout.OwnKey(cellKey), layout.OwnRecord{Node: node, Epoch: epoch}.Encode(), store.PutOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) lease(node string, expires time.Time) {
	f.t.Helper()
	l := layout.NodeLease{Node: node, ExpiresMs: uint64(expires.UnixMilli()), Addr: fleet.UnroutableAddr(node)}
	if _, err := f.s.Put(f.ctx, layout.NodeKey(node), l.Encode(), store.PutOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) keys(prefix string) []string {
	f.t.Helper()
	page, err := store.ListAll(f.ctx, f.s, store.ListOptions{Prefix: prefix})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, o := range page.Objects {
		out = append(out, o.Key)
	}
	return out
}

func (f *fixture) retired(cellKey string) *Retired {
	f.t.Helper()
	obj, err := f.s.Get(f.ctx, layout.WakeRetiredKey(cellKey))
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := DecodeRetired(layout.WakeRetiredKey(cellKey), obj.Data)
	if err != nil {
		f.t.Fatal(err)
	}
	return &r
}

func atMs(t time.Time) *int64 { v := t.UnixMilli(); return &v }

func wait(t *testing.T, d durability.Durable) error {
	t.Helper()
	select {
	case <-d.Done():
		return d.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("publication never resolved")
		return nil
	}
}

// settle waits for the publications in flight (their retirement runs after
// the returned Durable resolves).
func settle(t *testing.T, svc *Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPublishWritesTheEntryThenRetiresOlderOnes(t *testing.T) {
	f := newFixture(t)
	f.own(cellA, "n1", 3)
	svc := f.service("n1")
	due1 := t0.Add(90 * time.Second)
	p1 := wakeport.Publication{Cell: cellA, Epoch: 3, Seq: 1, AtMs: atMs(due1)}
	if err := wait(t, svc.Publish(p1, durability.Resolved(nil))); err != nil {
		t.Fatal(err)
	}
	settle(t, svc)
	key1 := EntryKey(cellA, due1.UnixMilli(), Identity{3, 1})
	obj, err := f.s.Get(f.ctx, key1)
	if err != nil {
		t.Fatalf("entry not written: %v", err)
	}
	if e, err := DecodeEntry(key1, obj.Data); err != nil || e.Cell != cellA || e.DueMs != due1.UnixMilli() || e.Identity != (Identity{3, 1}) {
		t.Fatalf("entry %+v, %v", e, err)
	}
	if r := f.retired(cellA); r == nil || r.Identity != (Identity{3, 1}) || r.AtMs == nil || *r.AtMs != due1.UnixMilli() {
		t.Fatalf("retired %+v", r)
	}

	// A re-arm replaces it: the new entry is written and the old deleted.
	svc = f.service("n1")
	due2 := t0.Add(10 * time.Minute)
	if err := wait(t, svc.Publish(wakeport.Publication{Cell: cellA, Epoch: 3, Seq: 2, AtMs: atMs(due2)}, durability.Resolved(nil))); err != nil {
		t.Fatal(err)
	}
	// The old entry was written by an earlier Service: only the cleanup
	// pass knows it. This one deletes its own; the waker cleans the rest.
	settle(t, svc)
	key2 := EntryKey(cellA, due2.UnixMilli(), Identity{3, 2})
	if got := f.keys(layout.WakeEntriesPrefix); !slices.Contains(got, key2) {
		t.Fatalf("entries %v, want %s among them", got, key2)
	}
	if err := svc.cleanup(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.keys(layout.WakeEntriesPrefix); !slices.Equal(got, []string{key2}) {
		t.Fatalf("after cleanup entries %v, want only %s", got, key2)
	}

	// Deleting the alarm retires with a null time, and the last entry goes.
	svc = f.service("n1")
	if err := wait(t, svc.Publish(wakeport.Publication{Cell: cellA, Epoch: 3, Seq: 3}, durability.Resolved(nil))); err != nil {
		t.Fatal(err)
	}
	settle(t, svc)
	if r := f.retired(cellA); r == nil || r.Identity != (Identity{3, 3}) || r.AtMs != nil {
		t.Fatalf("retired %+v, want identity 3-3 with a null time", r)
	}
	if err := svc.cleanup(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.keys(layout.WakeEntriesPrefix); len(got) != 0 {
		t.Fatalf("entries left after the alarm was deleted: %v", got)
	}
}

func TestPublishDeletesItsOwnReplacedEntries(t *testing.T) {
	f := newFixture(t)
	f.own(cellA, "n1", 1)
	svc := f.service("n1")
	for seq := uint64(1); seq <= 4; seq++ {
		p := wakeport.Publication{Cell: cellA, Epoch: 1, Seq: seq, AtMs: atMs(t0.Add(time.Duration(seq) * time.Minute))}
		if err := wait(t, svc.Publish(p, durability.Resolved(nil))); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, svc)
	want := EntryKey(cellA, t0.Add(4*time.Minute).UnixMilli(), Identity{1, 4})
	if got := f.keys(layout.WakeEntriesPrefix); !slices.Equal(got, []string{want}) {
		t.Fatalf("entries %v, want only the newest %s", got, want)
	}
}

// The reply waits for durability: a publication resolves only once its
// commit is durable, and a commit that failed fails the publication.
func TestPublishWaitsForTheCommit(t *testing.T) {
	f := newFixture(t)
	f.own(cellA, "n1", 1)
	svc := f.service("n1")
	commit := durability.NewFuture()
	d := svc.Publish(wakeport.Publication{Cell: cellA, Epoch: 1, Seq: 1, AtMs: atMs(t0)}, commit)
	select {
	case <-d.Done():
		t.Fatal("the publication resolved before its commit was durable")
	case <-time.After(50 * time.Millisecond):
	}
	boom := errors.New("upload failed")
	commit.Resolve(boom)
	if err := wait(t, d); !errors.Is(err, boom) {
		t.Fatalf("publication error %v, want the commit's", err)
	}
	settle(t, svc)
	if r := f.retired(cellA); r != nil {
		t.Fatalf("a failed commit was retired: %+v", r)
	}
}

type failingPuts struct {
	store.Store
	prefix string
}

func (s failingPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if len(key) >= len(s.prefix) && key[:len(s.prefix)] == s.prefix {
		return "", errors.New("bucket unavailable")
	}
	return s.Store.Put(ctx, key, data, opts)
}

func TestPublishFailsWhenTheEntryCannotBeWritten(t *testing.T) {
	f := newFixture(t)
	svc, err := New(Options{Store: failingPuts{f.s, layout.WakeEntriesPrefix}, Node: "n1", Clock: clock.NewReal(), Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(t, svc.Publish(wakeport.Publication{Cell: cellA, Epoch: 1, Seq: 1, AtMs: atMs(t0)}, durability.Resolved(nil))); err == nil {
		t.Fatal("a publication whose entry was never written succeeded")
	}
}

// flakyEntries fails the first fail writes of entries, then passes them on.
type flakyEntries struct {
	store.Store
	mu   sync.Mutex
	fail int
	puts int
}

func (s *flakyEntries) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if len(key) >= len(layout.WakeEntriesPrefix) && key[:len(layout.WakeEntriesPrefix)] == layout.WakeEntriesPrefix {
		s.mu.Lock()
		s.puts++
		failing := s.puts <= s.fail
		s.mu.Unlock()
		if failing {
			return "", errors.New("bucket unavailable")
		}
	}
	return s.Store.Put(ctx, key, data, opts)
}

// A failed entry write is retried, Retries times, before the publication
// fails.
func TestPublishRetriesTheEntryWrite(t *testing.T) {
	f := newFixture(t)
	flaky := &flakyEntries{Store: f.s, fail: 2}
	svc, err := New(Options{Store: flaky, Node: "n1", Clock: clock.NewReal(), Retries: 2, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := wakeport.Publication{Cell: cellA, Epoch: 1, Seq: 1, AtMs: atMs(t0)}
	if err := wait(t, svc.Publish(p, durability.Resolved(nil))); err != nil {
		t.Fatalf("a publication whose entry was written on the third attempt failed: %v", err)
	}
	if flaky.puts != 3 {
		t.Fatalf("%d entry writes, want 3", flaky.puts)
	}
	if _, err := f.s.Get(context.Background(), EntryKey(cellA, *p.AtMs, Identity{Epoch: 1, Seq: 1})); err != nil {
		t.Fatalf("the entry is not there: %v", err)
	}
}

// A node that lost the cell must not retire the new owner's entries.
func TestRetirementNeedsCurrentOwnership(t *testing.T) {
	for name, own := range map[string]layout.OwnRecord{
		"other node":  {Node: "n2", Epoch: 2},
		"later epoch": {Node: "n1", Epoch: 2},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.own(cellA, own.Node, own.Epoch)
			svc := f.service("n1")
			if err := wait(t, svc.Publish(wakeport.Publication{Cell: cellA, Epoch: 1, Seq: 5, AtMs: atMs(t0)}, durability.Resolved(nil))); err != nil {
				t.Fatal(err)
			}
			settle(t, svc)
			if r := f.retired(cellA); r != nil {
				t.Fatalf("retired %+v without owning the cell at the publication's epoch", r)
			}
		})
	}
}

// A newer retirement already stored wins over a stale one.
func TestStaleRetirementLeavesTheNewerOne(t *testing.T) {
	f := newFixture(t)
	f.own(cellA, "n1", 4)
	newer := Retired{Identity: Identity{4, 9}}
	if _, err := f.s.Put(f.ctx, layout.WakeRetiredKey(cellA), newer.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := f.service("n1")
	if err := wait(t, svc.Publish(wakeport.Publication{Cell: cellA, Epoch: 4, Seq: 3, AtMs: atMs(t0)}, durability.Resolved(nil))); err != nil {
		t.Fatal(err)
	}
	settle(t, svc)
	if r := f.retired(cellA); r == nil || r.Identity != (Identity{4, 9}) {
		t.Fatalf("retired %+v, want the newer 4-9 kept", r)
	}
	if got := f.keys(layout.WakeEntriesPrefix); len(got) != 0 {
		t.Fatalf("the stale entry survived: %v", got)
	}
}

type recordingWaker struct {
	mu    sync.Mutex
	cells []string
	err   error
}

func (w *recordingWaker) Wake(ctx context.Context, cellKey string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cells = append(w.cells, cellKey)
	return w.err
}

func (w *recordingWaker) woken() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.cells)
	sort.Strings(out)
	return out
}

func (f *fixture) entry(cellKey string, due time.Time, id Identity) string {
	f.t.Helper()
	key := EntryKey(cellKey, due.UnixMilli(), id)
	if _, err := f.s.Put(f.ctx, key, Entry{Cell: cellKey, DueMs: due.UnixMilli(), Identity: id}.Encode(), store.PutOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return key
}

// Who wakes whom (§7.4): a node wakes its own due cells; cells nobody live
// owns only while it holds the waker role; never a live peer's cells, nor
// entries not yet due or already obsolete.
func TestPollWakesDueCells(t *testing.T) {
	const (
		mine     = "Room:0000000000000000000000000000000000000000000000000000000000000001"
		peers    = "Room:0000000000000000000000000000000000000000000000000000000000000002"
		orphan   = "Room:0000000000000000000000000000000000000000000000000000000000000003"
		deadOwns = "Room:0000000000000000000000000000000000000000000000000000000000000004"
		released = "Room:0000000000000000000000000000000000000000000000000000000000000005"
		later    = "Room:0000000000000000000000000000000000000000000000000000000000000006"
		obsolete = "Room:0000000000000000000000000000000000000000000000000000000000000007"
	)
	f := newFixture(t)
	f.clk.Set(t0.Add(5 * time.Minute))
	f.lease("n1", t0.Add(time.Hour))
	f.lease("n2", t0.Add(time.Hour))
	f.lease("dead", t0.Add(time.Minute))
	past := t0.Add(time.Minute)
	f.own(mine, "n1", 1)
	f.entry(mine, past, Identity{1, 1})
	f.own(peers, "n2", 1)
	f.entry(peers, past, Identity{1, 1})
	f.entry(orphan, past, Identity{1, 1})
	f.own(deadOwns, "dead", 1)
	f.entry(deadOwns, past, Identity{1, 1})
	f.own(released, "", 2)
	f.entry(released, past, Identity{1, 1})
	f.own(later, "n1", 1)
	f.entry(later, t0.Add(time.Hour), Identity{1, 1})
	f.own(obsolete, "n1", 1)
	stale := f.entry(obsolete, past, Identity{1, 1})
	if _, err := f.s.Put(f.ctx, layout.WakeRetiredKey(obsolete), Retired{Identity: Identity{1, 2}}.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}

	svc := f.service("n1")
	w := &recordingWaker{}
	if err := svc.pollOnce(f.ctx, w, false); err != nil {
		t.Fatal(err)
	}
	if got := w.woken(); !slices.Equal(got, []string{mine}) {
		t.Fatalf("not elected: woke %v, want only its own %s", got, mine)
	}
	w = &recordingWaker{}
	if err := svc.pollOnce(f.ctx, w, true); err != nil {
		t.Fatal(err)
	}
	if got, want := w.woken(), []string{mine, orphan, deadOwns, released}; !slices.Equal(got, sorted(want)) {
		t.Fatalf("elected: woke %v, want %v", got, sorted(want))
	}
	if err := svc.cleanup(f.ctx); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.keys(layout.WakeEntriesPrefix), stale) {
		t.Fatal("cleanup kept an obsolete entry")
	}
	if len(f.keys(layout.WakeEntriesPrefix)) != 6 {
		t.Fatalf("cleanup deleted live entries: %v", f.keys(layout.WakeEntriesPrefix))
	}
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

// A failed wake (the cell moved, the runtime is closing) is logged and the
// scan goes on.
func TestPollSurvivesWakeErrors(t *testing.T) {
	f := newFixture(t)
	f.lease("n1", t0.Add(time.Hour))
	f.own(cellA, "n1", 1)
	f.own(cellB, "n1", 1)
	f.entry(cellA, t0, Identity{1, 1})
	f.entry(cellB, t0, Identity{1, 1})
	svc := f.service("n1")
	w := &recordingWaker{err: errors.New("owned elsewhere")}
	if err := svc.pollOnce(f.ctx, w, false); err != nil {
		t.Fatal(err)
	}
	if got := w.woken(); len(got) != 2 {
		t.Fatalf("woke %v, want both cells tried", got)
	}
}

// One node holds the waker role at a time; when it stops renewing, another
// takes over once the role's lease (3 ticks) has expired.
func TestWakerElection(t *testing.T) {
	f := newFixture(t)
	a, b := f.service("a"), f.service("b")
	if ok, err := a.elect(f.ctx); err != nil || !ok {
		t.Fatalf("a: elected %v, %v", ok, err)
	}
	if ok, err := b.elect(f.ctx); err != nil || ok {
		t.Fatalf("b while a holds the role: elected %v, %v", ok, err)
	}
	f.clk.Advance(time.Second)
	if ok, err := a.elect(f.ctx); err != nil || !ok {
		t.Fatalf("a renewing: elected %v, %v", ok, err)
	}
	f.clk.Advance(2 * time.Second)
	if ok, _ := b.elect(f.ctx); ok {
		t.Fatal("b took the role before a's lease expired")
	}
	f.clk.Advance(1500 * time.Millisecond)
	if ok, err := b.elect(f.ctx); err != nil || !ok {
		t.Fatalf("b after a's lease expired: elected %v, %v", ok, err)
	}
	if ok, _ := a.elect(f.ctx); ok || a.Elected() {
		t.Fatal("a still elected after b took over")
	}
}

func TestPrepare(t *testing.T) {
	t.Run("fresh bucket", func(t *testing.T) {
		f := newFixture(t)
		f.own(cellA, "gone", 1) // a cell from before the wake index
		f.lease("gone", t0.Add(-time.Minute))
		if err := CheckReady(f.ctx, f.s); !errors.Is(err, ErrNotReady) {
			t.Fatalf("CheckReady on a fresh bucket: %v, want ErrNotReady", err)
		}
		if err := Prepare(f.ctx, f.s, f.clk); err != nil {
			t.Fatal(err)
		}
		obj, err := f.s.Get(f.ctx, layout.WakeFormatKey)
		if err != nil || string(obj.Data) != string(FormatRecord{Format: 2}.Encode()) {
			t.Fatalf("format marker %q, %v", obj.Data, err)
		}
		if got := f.keys(layout.WakeEntriesPrefix); !slices.Equal(got, []string{MigrationSeedKey(cellA)}) {
			t.Fatalf("entries %v, want one migration seed for %s", got, cellA)
		}
		if err := CheckReady(f.ctx, f.s); err != nil {
			t.Fatal(err)
		}
		if err := Prepare(f.ctx, f.s, f.clk); err != nil {
			t.Fatalf("a second starter: %v", err)
		}
	})
	t.Run("live nodes", func(t *testing.T) {
		f := newFixture(t)
		f.lease("n2", t0.Add(time.Minute))
		var live *LiveNodesError
		if err := Prepare(f.ctx, f.s, f.clk); !errors.As(err, &live) {
			t.Fatalf("initialized under a live node: %v", err)
		}
		if _, err := f.s.Get(f.ctx, layout.WakeFormatKey); !store.IsNotFound(err) {
			t.Fatal("a refused initialization wrote the marker")
		}
	})
	t.Run("unfinished migration", func(t *testing.T) {
		f := newFixture(t)
		f.own(cellB, "gone", 1)
		f.s.Put(f.ctx, layout.WakeFormatKey, FormatRecord{Format: 2, Migrating: true}.Encode(), store.PutOptions{})
		if err := CheckReady(f.ctx, f.s); !errors.Is(err, ErrNotReady) {
			t.Fatalf("CheckReady mid-migration: %v", err)
		}
		if err := Prepare(f.ctx, f.s, f.clk); err != nil {
			t.Fatal(err)
		}
		if err := CheckReady(f.ctx, f.s); err != nil {
			t.Fatal(err)
		}
		if got := f.keys(layout.WakeEntriesPrefix); !slices.Equal(got, []string{MigrationSeedKey(cellB)}) {
			t.Fatalf("entries %v", got)
		}
	})
	refuse := map[string]func(f *fixture){
		"other format":     func(f *fixture) { f.s.Put(f.ctx, layout.WakeFormatKey, []byte(`{"format":3}`), store.PutOptions{}) },
		"unmarked entries": func(f *fixture) { f.entry(cellA, t0, Identity{1, 1}) },
		"legacy marker":    func(f *fixture) { f.s.Put(f.ctx, layout.WakeLegacyFormatKey, []byte(`{}`), store.PutOptions{}) },
	}
	for name, prepare := range refuse {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			prepare(f)
			if err := Prepare(f.ctx, f.s, f.clk); !errors.Is(err, ErrFormatBlocked) {
				t.Fatalf("Prepare: %v, want ErrFormatBlocked", err)
			}
			if err := f.service("n1").Run(f.ctx, &recordingWaker{}); err == nil {
				t.Fatal("Run started on wake data this format cannot read")
			}
		})
	}
}
