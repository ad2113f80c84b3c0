package tests

// A single-host cell on the LTX log does not sync its local file per
// commit: a restart mark naming the machine's boot sends a cell whose file
// may lack acknowledged commits (after a power loss or an OS crash) to the
// bucket (core/cell/unsynced.go). The boot identity is injected
// (cell.Options.BootID), so a "machine restart" here is a new runtime with
// another boot id over a database file that lost its unsynced tail.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
)

type restartObj struct{ st *cell.State }

func newRestartObj(ctx context.Context, st *cell.State) (*restartObj, error) {
	_, err := st.SQL().Exec(ctx, "CREATE TABLE IF NOT EXISTS w(k TEXT PRIMARY KEY)")
	return &restartObj{st}, err
}

// restartNode is a runtime on the embedded default (wasm in WAL mode with
// synchronous=NORMAL, shard locks, the LTX log on a local-files bucket)
// under dir, on the machine boot names.
type restartNode struct {
	defaultNode
	ns   *cell.Namespace[*restartObj]
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func openRestartNode(t *testing.T, dir, boot string, shards bool) *restartNode {
	t.Helper()
	return openRestartNodeMode(t, dir, boot, shards, ltxlog.Mode())
}

func openRestartNodeMode(t *testing.T, dir, boot string, shards bool, mode durability.Mode) *restartNode {
	t.Helper()
	name := "wasm"
	if mode.NeedsSessions {
		name = "modernc" // the changeset log needs SQLite sessions
	}
	drv, err := pickDriver(name, "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d := openDefaultMode(t, dir, "restart", drv, shards, nil, mode, func(o *cell.Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.BootID = func() (string, error) {
			if boot == "" {
				return "", errors.New("no boot identity here")
			}
			return boot, nil
		}
	})
	ns, err := cell.Register(d.rt, "Restart", newRestartObj)
	if err != nil {
		t.Fatal(err)
	}
	return &restartNode{defaultNode: d, ns: ns, logs: logs}
}

// crash drops every cell without a final flush or a clean close, as a
// killed process does, and lets the shard locks and the bucket go.
func (n *restartNode) crash(t *testing.T) {
	t.Helper()
	n.rt.EvictAll()
	n.close(t)
}

func (n *restartNode) close(t *testing.T) {
	t.Helper()
	if err := n.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.shards != nil {
		n.shards.Close()
	}
	store.Close(n.bucket)
}

func (n *restartNode) path(t *testing.T, name string) string {
	t.Helper()
	p, err := cell.DatabasePath(filepath.Join(n.rt.DataDir()), n.ns.Key(n.ns.IDFromName(name)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeConcurrently acknowledges callers×each new rows named prefix-c-i,
// from callers concurrent callers.
func (n *restartNode) writeConcurrently(t *testing.T, name, prefix string, callers, each int) []string {
	t.Helper()
	stub := n.ns.Get(n.ns.IDFromName(name))
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k := fmt.Sprintf("%s-%d-%d", prefix, c, i)
				if _, err := cell.Call(context.Background(), stub, func(ctx context.Context, o *restartObj) (int, error) {
					_, err := o.st.SQL().Exec(ctx, "INSERT INTO w(k) VALUES (?)", k)
					return 0, err
				}); err != nil {
					errs <- err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var keys []string
	for c := 0; c < callers; c++ {
		for i := 0; i < each; i++ {
			keys = append(keys, fmt.Sprintf("%s-%d-%d", prefix, c, i))
		}
	}
	return keys
}

func (n *restartNode) rows(t *testing.T, name string) map[string]bool {
	t.Helper()
	stub := n.ns.Get(n.ns.IDFromName(name))
	keys, err := cell.Call(context.Background(), stub, func(ctx context.Context, o *restartObj) ([]string, error) {
		rows, err := o.st.SQL().Query(ctx, "SELECT k FROM w")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		return keys, rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, k := range keys {
		got[k] = true
	}
	return got
}

func missing(got map[string]bool, want []string) []string {
	var out []string
	for _, k := range want {
		if !got[k] {
			out = append(out, k)
		}
	}
	return out
}

// copyDatabase copies a database file and its WAL (what the disk would
// hold had later commits never left the page cache) from src to dst.
func copyDatabase(t *testing.T, src, dst string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(src + suffix)
		if errors.Is(err, fs.ErrNotExist) {
			os.Remove(dst + suffix)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(dst + "-shm")
}

// insertLocally writes a row into the cell's local file behind the
// runtime's back: a row only the local file holds, which shows whether an
// activation served the file or rebuilt it from the bucket.
func insertLocally(t *testing.T, path, key string) {
	t.Helper()
	drv, _ := pickDriver("wasm", "NORMAL")
	ctx := context.Background()
	conn, err := drv.Open(ctx, driver.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "INSERT INTO w(k) VALUES (?)", key); err != nil {
		t.Fatal(err)
	}
}

func markBoot(t *testing.T, dbPath string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(dbPath + "-unsynced")
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data)), true
}

// TestRestartRestoresAcknowledgedWritesFromTheBucket: 24 callers' acknowledged
// writes survive a machine restart that cost the local file its unsynced
// tail: the new boot finds the restart mark of the old one and rebuilds the
// cell from the bucket.
func TestRestartRestoresAcknowledgedWritesFromTheBucket(t *testing.T) {
	for _, mode := range []durability.Mode{ltxlog.Mode(), changeset.Mode()} {
		t.Run(mode.Name, func(t *testing.T) { testRestartRestores(t, mode) })
	}
}

func testRestartRestores(t *testing.T, mode durability.Mode) {
	dir := t.TempDir()
	a := openRestartNodeMode(t, dir, "boot-1", true, mode)
	first := a.writeConcurrently(t, "c", "first", 24, 5)
	path := a.path(t, "c")
	if boot, ok := markBoot(t, path); !ok || boot != "boot-1" {
		t.Fatalf("after acknowledged writes the restart mark is %q (present %v), want boot-1", boot, ok)
	}
	// What the disk holds if nothing later leaves the page cache.
	old := filepath.Join(dir, "old.sqlite3")
	copyDatabase(t, path, old)
	second := a.writeConcurrently(t, "c", "second", 24, 5)
	a.crash(t)
	copyDatabase(t, old, path) // the machine restarts: the unsynced tail is gone

	b := openRestartNodeMode(t, dir, "boot-2", true, mode)
	defer b.close(t)
	got := b.rows(t, "c")
	if m := missing(got, append(first, second...)); len(m) != 0 {
		t.Fatalf("after the restart %d of %d acknowledged writes are missing (first: %v)", len(m), len(first)+len(second), m[0])
	}
	if !strings.Contains(b.logs.String(), "restoring the cell from the bucket") {
		t.Fatalf("the restart did not restore from the bucket; logs:\n%s", b.logs.String())
	}
	// The new boot owns the mark now; more writes still acknowledge.
	third := b.writeConcurrently(t, "c", "third", 24, 2)
	if boot, _ := markBoot(t, path); boot != "boot-2" {
		t.Fatalf("the restart mark names %q after the restart, want boot-2", boot)
	}
	if m := missing(b.rows(t, "c"), third); len(m) != 0 {
		t.Fatalf("writes after the restart are missing: %v", m)
	}
}

// TestKilledProcessKeepsTheLocalFile: a killed process loses nothing the
// page cache holds, so the same boot serves the local file as it is: a row
// only the local file holds is still there, nothing was restored.
func TestKilledProcessKeepsTheLocalFile(t *testing.T) {
	dir := t.TempDir()
	a := openRestartNode(t, dir, "boot-1", true)
	acked := a.writeConcurrently(t, "c", "w", 24, 4)
	path := a.path(t, "c")
	a.crash(t)
	if _, ok := markBoot(t, path); !ok {
		t.Fatal("a killed process left no restart mark")
	}
	insertLocally(t, path, "local-only")

	b := openRestartNode(t, dir, "boot-1", true)
	defer b.close(t)
	got := b.rows(t, "c")
	if !got["local-only"] {
		t.Fatal("the same boot restored the cell from the bucket instead of serving its local file")
	}
	if m := missing(got, acked); len(m) != 0 {
		t.Fatalf("acknowledged writes are missing: %v", m)
	}
	if strings.Contains(b.logs.String(), "restored cell from bucket") {
		t.Fatalf("the same boot restored from the bucket; logs:\n%s", b.logs.String())
	}
}

// TestCleanCloseRemovesTheRestartMark: a clean close syncs the file and
// removes the mark, so even a new boot serves the local file.
func TestCleanCloseRemovesTheRestartMark(t *testing.T) {
	dir := t.TempDir()
	a := openRestartNode(t, dir, "boot-1", true)
	a.writeConcurrently(t, "c", "w", 24, 2)
	path := a.path(t, "c")
	a.close(t)
	if _, ok := markBoot(t, path); ok {
		t.Fatal("a clean close left the restart mark")
	}
	insertLocally(t, path, "local-only")
	b := openRestartNode(t, dir, "boot-2", true)
	defer b.close(t)
	if !b.rows(t, "c")["local-only"] {
		t.Fatal("after a clean close a new boot restored the cell from the bucket")
	}
}

// TestRestartKeepsAFileTheBucketDoesNotHold: a stale mark with nothing in
// the bucket keeps the local file (with a warning): rebuilding from an
// empty bucket would lose everything.
func TestRestartKeepsAFileTheBucketDoesNotHold(t *testing.T) {
	dir := t.TempDir()
	a := openRestartNode(t, dir, "boot-1", true)
	acked := a.writeConcurrently(t, "c", "w", 24, 2)
	path := a.path(t, "c")
	a.crash(t)
	if err := os.RemoveAll(filepath.Join(dir, "bucket")); err != nil {
		t.Fatal(err)
	}
	b := openRestartNode(t, dir, "boot-2", true)
	defer b.close(t)
	if m := missing(b.rows(t, "c"), acked); len(m) != 0 {
		t.Fatalf("the local file was not kept: %d rows missing", len(m))
	}
	if !strings.Contains(b.logs.String(), "keeping the local database") {
		t.Fatalf("no warning about the kept file; logs:\n%s", b.logs.String())
	}
	if boot, _ := markBoot(t, path); boot != "boot-2" {
		t.Fatalf("the restart mark names %q, want boot-2", boot)
	}
}

// TestNoRestartMarkWithoutOwnershipOrBootID: without ownership (lease.None)
// the local file is the primary copy, and without a boot identity the log
// syncs the file per group commit: neither writes a mark.
func TestNoRestartMarkWithoutOwnershipOrBootID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		boot   string
		shards bool
	}{{"no-ownership", "boot-1", false}, {"no-boot-id", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			n := openRestartNode(t, t.TempDir(), tc.boot, tc.shards)
			n.writeConcurrently(t, "c", "w", 24, 2)
			if boot, ok := markBoot(t, n.path(t, "c")); ok {
				t.Fatalf("a restart mark (%q) was written", boot)
			}
			n.crash(t)
		})
	}
}
