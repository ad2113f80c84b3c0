package tests

// Issue 13, item 2: an activation does no work it need not do, on the
// embedded default (wasm in WAL mode, local files primary, shard lease, LTX
// log in a local-files bucket).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

type lazyObj struct{ st *cell.State }

func (o *lazyObj) Alarm(ctx context.Context, info cell.AlarmInfo) error { return nil }

// lazyNode is one runtime on the embedded default under dir (cells/,
// shards/, bucket/).
type lazyNode struct {
	rt     *cell.Runtime
	ns     *cell.Namespace[*lazyObj]
	bucket store.Store
	shards *shard.Lease
}

func openLazy(t testing.TB, dir string) *lazyNode {
	t.Helper()
	drv, _ := pickDriver("wasm", "NORMAL")
	return openLazyWith(t, dir, drv)
}

func openLazyWith(t testing.TB, dir string, drv driver.Driver) *lazyNode {
	t.Helper()
	d := openDefault(t, dir, "lazy", drv, true, nil)
	ns, err := cell.Register(d.rt, "Lazy", func(ctx context.Context, st *cell.State) (*lazyObj, error) { return &lazyObj{st}, nil })
	if err != nil {
		t.Fatal(err)
	}
	return &lazyNode{rt: d.rt, ns: ns, bucket: d.bucket, shards: d.shards}
}

// defaultNode is a runtime as cellb serve runs it without --bucket (ids
// keyed by script): the given driver, local files primary, the LTX log on a local-files bucket
// under dir/bucket, cells under dir/cells, and with shards, shard locks
// under dir/shards. wrap, if set, wraps the bucket the log writes to.
type defaultNode struct {
	rt     *cell.Runtime
	bucket store.Store // as wrapped
	shards *shard.Lease
}

func openDefault(t testing.TB, dir, script string, drv driver.Driver, shards bool, wrap func(store.Store) store.Store) defaultNode {
	t.Helper()
	return openDefaultWith(t, dir, script, drv, shards, wrap, nil)
}

// openDefaultWith is openDefault with configure, if set, changing the
// runtime's options last.
func openDefaultWith(t testing.TB, dir, script string, drv driver.Driver, shards bool, wrap func(store.Store) store.Store, configure func(*cell.Options)) defaultNode {
	return openDefaultMode(t, dir, script, drv, shards, wrap, ltxlog.Mode(), configure)
}

// openDefaultMode is openDefaultWith with the log of another durability
// mode.
func openDefaultMode(t testing.TB, dir, script string, drv driver.Driver, shards bool, wrap func(store.Store) store.Store, mode durability.Mode, configure func(*cell.Options)) defaultNode {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bucket"), 0o755); err != nil {
		t.Fatal(err)
	}
	var bucket store.Store
	bucket, err := fsstore.Open(filepath.Join(dir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		bucket = wrap(bucket)
	}
	lg, err := mode.Open(durability.OpenOptions{Store: bucket, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	opts := cell.Options{ScriptName: script, Driver: drv, DataDir: filepath.Join(dir, "cells"), Log: lg, Logger: quietLogger(), IdleTimeout: -1}
	var sh *shard.Lease
	if shards {
		if sh, err = shard.Open(filepath.Join(dir, "shards"), 16); err != nil {
			t.Fatal(err)
		}
		opts.Lease = sh
	}
	if configure != nil {
		configure(&opts)
	}
	rt, err := cell.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return defaultNode{rt: rt, bucket: bucket, shards: sh}
}

func (e *lazyNode) close(t testing.TB) {
	t.Helper()
	if err := e.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.shards.Close()
	store.Close(e.bucket)
}

func (e *lazyNode) call(t testing.TB, name string, fn func(ctx context.Context, o *lazyObj) (int64, error)) int64 {
	t.Helper()
	v, err := cell.Call(context.Background(), e.ns.Get(e.ns.IDFromName(name)), fn)
	if err != nil {
		t.Fatalf("cell %s: %v", name, err)
	}
	return v
}

// files maps every regular file under dir to its content's hash.
func files(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func diffFiles(before, after map[string][32]byte) []string {
	var d []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			d = append(d, "+"+k)
		} else if w != v {
			d = append(d, "~"+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, "-"+k)
		}
	}
	sort.Strings(d)
	return d
}

// kvGet, sqlMissing and alarmGet are the three reads of a never-written
// cell.
func kvGet(ctx context.Context, o *lazyObj) (int64, error) {
	_, found, err := o.st.KV().Get(ctx, "k")
	if found {
		return 1, err
	}
	return 0, err
}

func sqlMissing(ctx context.Context, o *lazyObj) (int64, error) {
	var v int64
	err := o.st.SQL().QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v)
	if err == nil || !strings.Contains(err.Error(), "no such table") {
		return 0, fmt.Errorf("SELECT from a missing table: %v, want no such table", err)
	}
	return 0, nil
}

func alarmGet(ctx context.Context, o *lazyObj) (int64, error) {
	_, set, err := o.st.GetAlarm(ctx)
	if set {
		return 1, err
	}
	return 0, err
}

func writeCell(ctx context.Context, o *lazyObj) (int64, error) {
	if err := o.st.KV().Put(ctx, "k", "v"); err != nil {
		return 0, err
	}
	_, err := o.st.SQL().Exec(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 42)")
	return 0, err
}

// 100 reads of never-written names create no file under the data
// directory and no object in the bucket (before the change: a database
// file, its WAL files and a snapshot per name), on the embedded default
// (the LTX log) and with every other durability mode's log (the changeset
// log on modernc, the driver with sessions; backups): each answers, from
// one listing, that it holds nothing for the cell (durability.Prober).
func TestReadsOfUnseenCellsStoreNothing(t *testing.T) {
	for _, m := range durabilityModes() {
		t.Run(m.Name, func(t *testing.T) {
			drvName := "wasm"
			if m.NeedsSessions {
				drvName = "modernc"
			}
			drv, err := pickDriver(drvName, "NORMAL")
			if err != nil {
				t.Skip(err)
			}
			dir := t.TempDir()
			d := openDefaultMode(t, dir, "lazy", drv, true, nil, m, nil)
			ns, err := cell.Register(d.rt, "Lazy", func(ctx context.Context, st *cell.State) (*lazyObj, error) { return &lazyObj{st}, nil })
			if err != nil {
				t.Fatal(err)
			}
			readsStoreNothing(t, dir, &lazyNode{rt: d.rt, ns: ns, bucket: d.bucket, shards: d.shards})
		})
	}
}

func readsStoreNothing(t *testing.T, dir string, e *lazyNode) {
	before := files(t, dir)
	reads := []func(context.Context, *lazyObj) (int64, error){kvGet, sqlMissing, alarmGet}
	var wg sync.WaitGroup
	for c := 0; c < 20; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < 100; i += 20 {
				e.call(t, "unseen-"+strconv.Itoa(i), reads[i%len(reads)])
			}
		}()
	}
	wg.Wait()
	if got := len(e.rt.ActiveCells()); got != 100 {
		t.Fatalf("%d cells active, want 100", got)
	}
	if d := diffFiles(before, files(t, dir)); len(d) > 0 {
		t.Fatalf("100 reads of unseen cells changed %d files while active: %v", len(d), d[:min(len(d), 10)])
	}
	e.close(t)
	if d := diffFiles(before, files(t, dir)); len(d) > 0 {
		t.Fatalf("100 reads of unseen cells changed %d files: %v", len(d), d[:min(len(d), 10)])
	}
}

// A cell first read, then written (in the same activation and in a later
// one) stores what a cell written directly stores: the bucket restores to
// the same database, and the local file reads back.
func TestReadThenWriteRestoresLikeADirectWrite(t *testing.T) {
	ctx := context.Background()
	restored := func(dir string) []byte {
		s, err := fsstore.Open(filepath.Join(dir, "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close(s)
		res, err := ltxlog.Restore(ctx, s, cell.CellKey("Lazy", cell.IDFromName("lazy", "Lazy", "x")), ltxlog.RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Image
	}
	direct := t.TempDir()
	e := openLazy(t, direct)
	e.call(t, "x", writeCell)
	e.close(t)

	readFirst := t.TempDir()
	e = openLazy(t, readFirst)
	e.call(t, "x", kvGet)
	e.call(t, "x", sqlMissing)
	e.call(t, "x", alarmGet)
	e.call(t, "x", writeCell)
	e.close(t)
	if a, b := restored(direct), restored(readFirst); !bytes.Equal(a, b) {
		t.Fatalf("the bucket of a cell read then written restores to %d bytes that differ from a cell written directly (%d bytes)", len(b), len(a))
	}

	// Reopened (the local file) and restored (the bucket alone).
	check := func(what string, e *lazyNode) {
		v := e.call(t, "x", func(ctx context.Context, o *lazyObj) (int64, error) {
			var v int64
			if err := o.st.SQL().QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
				return 0, err
			}
			return v, nil
		})
		if v != 42 {
			t.Fatalf("%s: read %d, want 42", what, v)
		}
		if n := e.call(t, "x", kvGet); n != 1 {
			t.Fatalf("%s: KV key missing", what)
		}
	}
	e = openLazy(t, readFirst)
	check("reopened", e)
	// A write under this new epoch changes a few pages only: its snapshot
	// needs the rest of the database, read at that first commit.
	e.call(t, "x", func(ctx context.Context, o *lazyObj) (int64, error) {
		return 0, o.st.KV().Put(ctx, "k2", "v2")
	})
	e.close(t)
	if err := os.RemoveAll(filepath.Join(readFirst, "cells")); err != nil {
		t.Fatal(err)
	}
	e = openLazy(t, readFirst)
	check("restored from the bucket", e)
	if n := e.call(t, "x", func(ctx context.Context, o *lazyObj) (int64, error) {
		_, found, err := o.st.KV().Get(ctx, "k2")
		if found {
			return 1, err
		}
		return 0, err
	}); n != 1 {
		t.Fatal("restored from the bucket: the later epoch's write is missing")
	}
	e.close(t)
}

// Reopening an existing cell and reading it writes nothing: no byte of the
// data directory, the shard files or the bucket changes (so nothing is
// synced; before the change each activation wrote and synced the shard's
// epoch, and the wake row's raise uploaded a new epoch's snapshot).
func TestReopenOfAStoredCellWritesNothing(t *testing.T) {
	dir := t.TempDir()
	e := openLazy(t, dir)
	for i := 0; i < 20; i++ {
		e.call(t, "stored-"+strconv.Itoa(i), writeCell)
	}
	e.close(t)
	// The next activation of a WAL database checkpoints what the last one
	// left: let one read activation do that first.
	e = openLazy(t, dir)
	for i := 0; i < 20; i++ {
		e.call(t, "stored-"+strconv.Itoa(i), kvGet)
	}
	e.close(t)
	before := files(t, dir)
	time.Sleep(10 * time.Millisecond)
	e = openLazy(t, dir)
	for i := 0; i < 20; i++ {
		if n := e.call(t, "stored-"+strconv.Itoa(i), kvGet); n != 1 {
			t.Fatalf("stored-%d lost its key", i)
		}
		e.call(t, "stored-"+strconv.Itoa(i), alarmGet)
	}
	e.close(t)
	if d := diffFiles(before, files(t, dir)); len(d) > 0 {
		t.Fatalf("reopening and reading 20 stored cells changed %d files: %v", len(d), d)
	}
}

// BenchmarkActivationsByKind: activations per second of existing cells (written
// before the timer, each activated once, by a read) and of new cells (a
// read of a never-written name), with 1 and 8 callers, on the embedded
// default. Baseline in the same run (driver): the embedded default's
// driver alone opening as many existing files and reading a row from each,
// the connections kept open like the cells. Run with a fixed count, e.g.
// -benchtime 3000x.
func BenchmarkActivationsByKind(b *testing.B) {
	for _, callers := range []int{1, 8} {
		b.Run(fmt.Sprintf("driver/callers=%d", callers), func(b *testing.B) {
			benchDriverOpens(b, callers)
		})
	}
	for _, kind := range []string{"existing", "existing-exclusive", "new"} {
		for _, callers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/callers=%d", kind, callers), func(b *testing.B) {
				dir := b.TempDir()
				open := openLazy
				if kind == "existing-exclusive" {
					// The default's driver with exclusive locking
					// (wasm.WithExclusiveLocking), not the default: see
					// docs/drivers-wasm.md.
					open = func(t testing.TB, dir string) *lazyNode {
						return openLazyWith(t, dir, wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithExclusiveLocking(), wasm.WithPragmas("synchronous=NORMAL")))
					}
				}
				e := open(b, dir)
				if kind != "new" {
					for i := 0; i < b.N; i++ {
						e.call(b, "c"+strconv.Itoa(i), writeCell)
					}
					e.close(b)
					e = open(b, dir)
				}
				defer e.close(b)
				var next atomic.Int64
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for c := 0; c < callers; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							e.call(b, "c"+strconv.Itoa(int(i)), kvGet)
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "activations/s")
			})
		}
	}
}

// A never-written cell's first write may come inside SQL.Transaction and
// while the turn still reads rows of the in-memory database: the file is
// created under the savepoints the turn holds (a rolled-back inner
// transaction stays rolled back), the rows stay readable, and what
// committed is stored.
func TestFirstWriteInsideATransaction(t *testing.T) {
	dir := t.TempDir()
	e := openLazy(t, dir)
	e.call(t, "tx", func(ctx context.Context, o *lazyObj) (int64, error) {
		sql := o.st.SQL()
		rows, err := sql.Query(ctx, "SELECT 1 UNION ALL SELECT 2")
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
			if n > 1 {
				continue
			}
			err := sql.Transaction(ctx, func(ctx context.Context) error {
				if _, err := sql.Exec(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)"); err != nil {
					return err
				}
				inner := sql.Transaction(ctx, func(ctx context.Context) error {
					if _, err := sql.Exec(ctx, "INSERT INTO t VALUES (1, 1)"); err != nil {
						return err
					}
					return fmt.Errorf("roll the inner one back")
				})
				if inner == nil {
					return fmt.Errorf("the inner transaction did not fail")
				}
				_, err := sql.Exec(ctx, "INSERT INTO t VALUES (2, 42)")
				return err
			})
			if err != nil {
				return 0, err
			}
		}
		if err := rows.Err(); err != nil || n != 2 {
			return 0, fmt.Errorf("read %d rows (%v), want 2", n, err)
		}
		return 0, nil
	})
	e.close(t)
	e = openLazy(t, dir)
	defer e.close(t)
	got := e.call(t, "tx", func(ctx context.Context, o *lazyObj) (int64, error) {
		var n, sum int64
		err := o.st.SQL().QueryRow(ctx, "SELECT count(*), total(v) FROM t").Scan(&n, &sum)
		return n*1000 + sum, err
	})
	if got != 1042 {
		t.Fatalf("stored rows: %d (count*1000 + sum), want 1042: row 2 only", got)
	}
}

// Under every mode, a cell first read (no file, no log object: the log's
// Prober said it holds nothing), then written, is stored: with its local
// file gone, a new runtime restores it from the bucket (through the log's
// streamed restore) with the write in it.
func TestReadThenWriteThenRestoreInEveryMode(t *testing.T) {
	for _, m := range durabilityModes() {
		t.Run(m.Name, func(t *testing.T) {
			drvName := "wasm"
			if m.NeedsSessions {
				drvName = "modernc"
			}
			dir := t.TempDir()
			open := func() *lazyNode {
				drv, err := pickDriver(drvName, "NORMAL")
				if err != nil {
					t.Skip(err)
				}
				d := openDefaultMode(t, dir, "lazy", drv, true, nil, m, nil)
				ns, err := cell.Register(d.rt, "Lazy", func(ctx context.Context, st *cell.State) (*lazyObj, error) { return &lazyObj{st}, nil })
				if err != nil {
					t.Fatal(err)
				}
				return &lazyNode{rt: d.rt, ns: ns, bucket: d.bucket, shards: d.shards}
			}
			e := open()
			e.call(t, "x", kvGet)
			e.call(t, "x", sqlMissing)
			e.call(t, "x", writeCell)
			e.close(t)
			if err := os.RemoveAll(filepath.Join(dir, "cells")); err != nil {
				t.Fatal(err)
			}
			e = open()
			defer e.close(t)
			got := e.call(t, "x", func(ctx context.Context, o *lazyObj) (int64, error) {
				v, found, err := o.st.KV().Get(ctx, "k")
				var s string
				if err == nil && found {
					err = v.Decode(&s)
				}
				if err != nil || !found || s != "v" {
					return 0, fmt.Errorf("k = %q (found %v, %v)", s, found, err)
				}
				var n int64
				err = o.st.SQL().QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&n)
				return n, err
			})
			if got != 42 {
				t.Fatalf("restored row holds %d, want 42", got)
			}
		})
	}
}

// benchDriverOpens opens b.N existing database files with the embedded
// default's driver from callers goroutines and reads a row from each,
// keeping every connection open until the timer stops.
func benchDriverOpens(b *testing.B, callers int) {
	ctx := context.Background()
	drv, _ := pickDriver("wasm", "NORMAL")
	dir := b.TempDir()
	path := func(i int) string { return filepath.Join(dir, "c"+strconv.Itoa(i)+".db") }
	for i := 0; i < b.N; i++ {
		c, err := drv.Open(ctx, driver.Config{Path: path(i)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, "CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO n VALUES (1, 0)"); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	conns := make([]driver.Conn, b.N)
	b.ResetTimer()
	start := time.Now()
	err := spread(b.N, callers, func(i int) error {
		c, err := drv.Open(ctx, driver.Config{Path: path(i)})
		if err != nil {
			return err
		}
		conns[i] = c
		return directRead(ctx, c)
	})
	elapsed := time.Since(start)
	b.StopTimer()
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "activations/s")
}
