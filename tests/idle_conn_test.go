package tests

// Options.IdleConnTimeout: an open cell with no event in flight gives up its
// database connection (and its file descriptors) and keeps everything
// else; its next event reopens the connection on the same file.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/conformance/celltest"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/wasm"
)

// releaseCounter is a slog handler that counts the runtime's "connection
// released" records (logged at debug level).
type releaseCounter struct{ n *atomic.Int64 }

func (h releaseCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h releaseCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cell connection released" {
		h.n.Add(1)
	}
	return nil
}
func (h releaseCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h releaseCounter) WithGroup(string) slog.Handler      { return h }

// connNode is a runtime with local files primary (lease.None), the given
// mode's log on a local-files bucket under dir/bucket and cells under
// cells, releasing idle connections after connIdle.
type connNode struct {
	rt       *cell.Runtime
	ns       *cell.Namespace[*lazyObj]
	bucket   store.Store
	released *atomic.Int64
}

func openConnNode(t testing.TB, dir, cells string, drv driver.Driver, mode durability.Mode, connIdle time.Duration) *connNode {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bucket"), 0o755); err != nil {
		t.Fatal(err)
	}
	bucket, err := fsstore.Open(filepath.Join(dir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	lg, err := mode.Open(durability.OpenOptions{Store: bucket, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	released := new(atomic.Int64)
	rt, err := cell.New(cell.Options{
		ScriptName: "idleconn", Driver: drv, DataDir: cells, Log: lg,
		Logger: slog.New(releaseCounter{released}), IdleTimeout: -1, IdleConnTimeout: connIdle,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cell.Register(rt, "Lazy", func(ctx context.Context, st *cell.State) (*lazyObj, error) { return &lazyObj{st}, nil })
	if err != nil {
		t.Fatal(err)
	}
	return &connNode{rt: rt, ns: ns, bucket: bucket, released: released}
}

func (e *connNode) call(t testing.TB, name string, fn func(ctx context.Context, o *lazyObj) (int64, error)) int64 {
	t.Helper()
	v, err := cell.Call(context.Background(), e.ns.Get(e.ns.IDFromName(name)), fn)
	if err != nil {
		t.Fatalf("cell %s: %v", name, err)
	}
	return v
}

func (e *connNode) close(t testing.TB) {
	t.Helper()
	if err := e.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	store.Close(e.bucket)
}

// openUnder counts the process's file descriptors open on files under dir
// (-1 where /proc/self/fd cannot be read).
func openUnder(dir string) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// incr adds one to the cell's counter row and returns the new count.
func incr(ctx context.Context, o *lazyObj) (int64, error) {
	if _, err := o.st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS n(id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO n VALUES (1, 1) ON CONFLICT(id) DO UPDATE SET v = v + 1"); err != nil {
		return 0, err
	}
	var v int64
	err := o.st.SQL().QueryRow(ctx, "SELECT v FROM n WHERE id = 1").Scan(&v)
	return v, err
}

func readCount(ctx context.Context, o *lazyObj) (int64, error) {
	var v int64
	err := o.st.SQL().QueryRow(ctx, "SELECT v FROM n WHERE id = 1").Scan(&v)
	return v, err
}

func sqlGet(ctx context.Context, o *lazyObj) (int64, error) {
	var v int64
	err := o.st.SQL().QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v)
	if err != nil {
		return 0, err
	}
	if _, found, err := o.st.KV().Get(ctx, "k"); err != nil || !found {
		return 0, fmt.Errorf("KV k: found %v, %v", found, err)
	}
	return v, nil
}

// Idle open cells close their database files (no descriptor stays open
// under the data directory) and stay open; the next call reopens the file
// and answers with the cell's data; unseen cells read before and after a
// release answer "nothing stored" and are created by a later write. Every
// driver. Before IdleConnTimeout, every open cell held its files until
// evicted.
func TestIdleCellsReleaseConnections(t *testing.T) {
	if openUnder(os.TempDir()) < 0 {
		t.Skip("no /proc/self/fd")
	}
	const stored, unseen = 40, 20
	for _, drv := range allDrivers() {
		t.Run(drv.Name(), func(t *testing.T) {
			dir := t.TempDir()
			cells := filepath.Join(dir, "cells")
			ltx := durabilityModes()[0]
			e := openConnNode(t, dir, cells, drv, ltx, 30*time.Millisecond)
			for i := 0; i < stored; i++ {
				e.call(t, "s"+strconv.Itoa(i), writeCell)
			}
			waitFor(t, "the stored cells' releases", func() bool { return e.released.Load() >= stored })
			waitFor(t, "no descriptor under the data directory", func() bool { return openUnder(cells) == 0 })
			if got := len(e.rt.ActiveCells()); got != stored {
				t.Fatalf("%d cells open after the releases, want %d (a release keeps the cell open)", got, stored)
			}
			for i := 0; i < stored; i++ {
				if v := e.call(t, "s"+strconv.Itoa(i), sqlGet); v != 42 {
					t.Fatalf("cell s%d answered %d after its release, want 42", i, v)
				}
			}
			waitFor(t, "the second round of releases", func() bool { return e.released.Load() >= 2*stored })
			waitFor(t, "no descriptor under the data directory", func() bool { return openUnder(cells) == 0 })

			before := e.released.Load()
			for i := 0; i < unseen; i++ {
				if v := e.call(t, "u"+strconv.Itoa(i), kvGet); v != 0 {
					t.Fatalf("unseen cell u%d: found %d", i, v)
				}
			}
			waitFor(t, "the unseen cells' releases", func() bool { return e.released.Load() >= before+unseen })
			for i := 0; i < unseen; i++ {
				if v := e.call(t, "u"+strconv.Itoa(i), kvGet); v != 0 {
					t.Fatalf("unseen cell u%d after its release: found %d", i, v)
				}
				e.call(t, "u"+strconv.Itoa(i), writeCell)
			}
			waitFor(t, "no descriptor under the data directory", func() bool { return openUnder(cells) == 0 })
			for i := 0; i < unseen; i++ {
				if v := e.call(t, "u"+strconv.Itoa(i), sqlGet); v != 42 {
					t.Fatalf("cell u%d answered %d after its release, want 42", i, v)
				}
			}
			if got := len(e.rt.ActiveCells()); got != stored+unseen {
				t.Fatalf("%d cells open, want %d", got, stored+unseen)
			}
			e.close(t)

			// Stored cells opened by a new runtime and released before
			// their first write: the epoch's snapshot is read, at that
			// write, from the reopened connection. A crash, then a restore
			// from the bucket into an empty directory, gives every write.
			g := openConnNode(t, dir, cells, drv, ltx, 30*time.Millisecond)
			for i := 0; i < stored; i++ {
				if v := g.call(t, "s"+strconv.Itoa(i), sqlGet); v != 42 {
					t.Fatalf("cell s%d answered %d, want 42", i, v)
				}
			}
			waitFor(t, "the releases", func() bool { return g.released.Load() >= stored })
			for i := 0; i < stored; i++ {
				if v := g.call(t, "s"+strconv.Itoa(i), incr); v != 1 {
					t.Fatalf("cell s%d counted %d, want 1", i, v)
				}
			}
			g.rt.EvictAll()
			g.close(t)
			h := openConnNode(t, dir, filepath.Join(dir, "restored"), drv, ltx, -1)
			defer h.close(t)
			for i := 0; i < stored; i++ {
				if v := h.call(t, "s"+strconv.Itoa(i), sqlGet); v != 42 {
					t.Fatalf("restored cell s%d answered %d, want 42", i, v)
				}
				if v := h.call(t, "s"+strconv.Itoa(i), readCount); v != 1 {
					t.Fatalf("restored cell s%d counted %d, want 1", i, v)
				}
			}
		})
	}
}

// 24 callers increment 6 cells whose connections are released after 1 ms
// idle, so calls keep meeting cells being released and reopened: every
// answer is right (each cell's answers are exactly 1..n), and after a crash
// (EvictAll) a fresh data directory restored from the bucket holds every
// acknowledged increment. The LTX log on every driver, the other modes on
// the first driver that has what they need (the backup mode, which
// acknowledges before its interval's upload, is closed in order instead of
// crashed).
func TestReleasedCellsConcurrentCallers(t *testing.T) {
	type run struct {
		drv  driver.Driver
		mode durability.Mode
	}
	var runs []run
	for _, m := range durabilityModes() {
		for _, drv := range allDrivers() {
			if !m.NeedsSessions || drv.Capabilities().Sessions {
				runs = append(runs, run{drv, m})
				if m.Name != "ltx" {
					break // the other modes on one driver
				}
			}
		}
	}
	// Without page capture the runtime tells a commit by the connection's
	// change counters and hands the log images: the counters start afresh
	// on each new connection.
	// Backups without capture read the image from the connection at every
	// commit: the log must read the new connection after a reopen.
	withoutCapture := len(runs)
	runs = append(runs, run{celltest.WithoutPageCapture(wasm.New()), durabilityModes()[0]})
	for _, m := range durabilityModes() {
		if m.Name == "backup" {
			runs = append(runs, run{celltest.WithoutPageCapture(wasm.New()), m})
		}
	}
	const callers, cellsN, each = 24, 6, 25
	for i, r := range runs {
		name := r.drv.Name() + "/" + r.mode.Name
		if i >= withoutCapture {
			name = "wasm-without-capture/" + r.mode.Name
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			e := openConnNode(t, dir, filepath.Join(dir, "cells"), r.drv, r.mode, time.Millisecond)
			var mu sync.Mutex
			answers := map[int][]int64{}
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for g := 0; g < callers; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					c := g % cellsN
					for j := 0; j < each; j++ {
						time.Sleep(time.Duration(rng.IntN(6000)) * time.Microsecond)
						v, err := cell.Call(context.Background(), e.ns.Get(e.ns.IDFromName("c"+strconv.Itoa(c))), incr)
						if err != nil {
							errs <- fmt.Errorf("caller %d, cell c%d: %w", g, c, err)
							return
						}
						mu.Lock()
						answers[c] = append(answers[c], v)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			want := make([]int64, callers/cellsN*each)
			for i := range want {
				want[i] = int64(i + 1)
			}
			for c := 0; c < cellsN; c++ {
				got := answers[c]
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("cell c%d answered %v, want 1..%d once each", c, got, len(want))
				}
			}
			if e.released.Load() == 0 {
				t.Fatal("no connection was released during the run")
			}
			t.Logf("%d releases", e.released.Load())
			if r.mode.Name == "backup" {
				e.close(t)
			} else {
				e.rt.EvictAll() // a crash: only what the log made durable survives
				e.close(t)
			}
			f := openConnNode(t, dir, filepath.Join(dir, "restored"), r.drv, r.mode, -1)
			defer f.close(t)
			for c := 0; c < cellsN; c++ {
				if v := f.call(t, "c"+strconv.Itoa(c), readCount); v != int64(len(want)) {
					t.Fatalf("cell c%d restored from the bucket holds %d, want %d", c, v, len(want))
				}
			}
		})
	}
}

// A fleet cell keeps its grant while its connection is released: its next
// event reopens the file under the same epoch (no restore: its writes stay
// and it writes on), and once another owner has fenced it (own.json names
// a newer epoch) its next write is refused and the object reset, as it is
// for a cell that kept its connection; the bucket holds every acknowledged
// write.
func TestReleasedFleetCellIsFenced(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	node, err := fleet.Join(ctx, fleet.Options{Store: s, Node: "a", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close(ctx)
	lg, _ := ltxlog.New(ltxlog.Options{Store: s, Logger: quietLogger()})
	released := new(atomic.Int64)
	rt, err := cell.New(cell.Options{ScriptName: "fence", Driver: wasm.New(), DataDir: t.TempDir(), Log: lg, Lease: node,
		Logger: slog.New(releaseCounter{released}), IdleTimeout: -1, IdleConnTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	ns, err := cell.Register(rt, "Counter", newBenchCell)
	if err != nil {
		t.Fatal(err)
	}
	stub := ns.Get(ns.IDFromName("c"))
	key := cell.CellKey("Counter", ns.IDFromName("c"))
	for round := 1; round <= 3; round++ {
		if _, err := cell.Call(ctx, stub, benchWrite); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the release", func() bool { return released.Load() >= int64(round) })
		if v, err := cell.Call(ctx, stub, benchRead); err != nil || v != int64(round) {
			t.Fatalf("round %d: read %d, %v after the release", round, v, err)
		}
		waitFor(t, "the release", func() bool { return released.Load() >= int64(round)+1 })
		released.Store(int64(round))
	}
	rec, _, err := fleet.ReadOwn(ctx, s, key)
	if err != nil || rec == nil || rec.Node != "a" {
		t.Fatalf("own.json: %+v, %v", rec, err)
	}
	fenced := layout.OwnRecord{Node: "b", Epoch: rec.Epoch + 1}
	if _, err := s.Put(ctx, layout.OwnKey(key), fenced.Encode(), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cell.Call(ctx, stub, benchWrite); err == nil {
		t.Fatal("a write after the fence was acknowledged")
	} else if !errors.As(err, new(*cell.BrokenObjectError)) {
		t.Fatalf("a write after the fence: %v, want a reset", err)
	}
	// The refused write may have reached the bucket (the ownership check
	// comes after durability); every acknowledged one must have.
	if got := restoreCount(t, s, key); got != 3 && got != 4 {
		t.Fatalf("the bucket holds %d increments, want the 3 acknowledged (and perhaps the refused one)", got)
	}
}

// restoreCount restores the cell from the bucket's LTX log into a fresh
// file and reads its counter.
func restoreCount(t *testing.T, s store.Store, key string) int64 {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "restored.db")
	if _, _, err := ltxlog.Mode().RestoreFile(ctx, s, key, durability.RestoreRequest{}, path); err != nil {
		t.Fatal(err)
	}
	c, err := wasm.New().Open(ctx, driver.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Query(ctx, "SELECT v FROM n WHERE id = 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var v int64
	if rows.Next() {
		if err := driver.ScanValues(rows.Values(), &v); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// Without page capture the runtime tells that a turn committed something by
// the connection's change counters, which start afresh on every
// connection: a cell that reopened its connection and made as many row
// changes as on the one before (one increment on each) still hands each
// commit to the log, so a crash and a restore from the bucket give every
// increment.
func TestReleasedCellCountsCommitsWithoutCapture(t *testing.T) {
	dir := t.TempDir()
	ltx := durabilityModes()[0]
	e := openConnNode(t, dir, filepath.Join(dir, "cells"), celltest.WithoutPageCapture(wasm.New()), ltx, 20*time.Millisecond)
	const rounds = 4
	for i := 1; i <= rounds; i++ {
		if v := e.call(t, "c", incr); v != int64(i) {
			t.Fatalf("increment %d answered %d", i, v)
		}
		waitFor(t, "the release", func() bool { return e.released.Load() >= int64(i) })
	}
	e.rt.EvictAll()
	e.close(t)
	f := openConnNode(t, dir, filepath.Join(dir, "restored"), wasm.New(), ltx, -1)
	defer f.close(t)
	if v := f.call(t, "c", readCount); v != rounds {
		t.Fatalf("the bucket restores %d increments, want the %d acknowledged", v, rounds)
	}
}
