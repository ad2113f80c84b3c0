package modernc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// These tests run the changeset log (core/changeset) on real SQLite
// sessions: random workloads, acknowledged commits, and restores into
// fresh connections compared row by row.

const csCell = "Room:c0ffee"

var csQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// dumpAll is the schema and every row of every table, rows sorted, so two
// databases with the same content compare equal.
func dumpAll(t *testing.T, c *Conn) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range queryAll(t, c, "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
		name := r[0].(string)
		out["schema:"+name] = []string{r[1].(string)}
		var rows []string
		// Named columns, not *: the statement text must change with the
		// table's shape (a cached SELECT * kept its old columns after
		// ALTER TABLE ADD COLUMN).
		var cols []string
		for _, col := range queryAll(t, c, "SELECT name FROM pragma_table_info(?) ORDER BY cid", name) {
			cols = append(cols, fmt.Sprintf("%q", col[0]))
		}
		for _, row := range queryAll(t, c, fmt.Sprintf("SELECT %s FROM %q", strings.Join(cols, ", "), name)) {
			rows = append(rows, fmt.Sprintf("%#v", row))
		}
		sort.Strings(rows)
		out[name] = rows
	}
	return out
}

func waitDurable(t *testing.T, d durability.Durable) error {
	t.Helper()
	select {
	case <-d.Done():
		return d.Err()
	case <-time.After(20 * time.Second):
		t.Fatal("a commit never resolved")
		return nil
	}
}

// csWorkload makes random transactions: row changes on keyed tables,
// rollbacks, schema changes now and then, and (when noKey) a table
// without a PRIMARY KEY, which sessions cannot record.
type csWorkload struct {
	t      *testing.T
	c      *Conn
	r      *rand.Rand
	tables []string
	noKey  bool
	cols   int
}

func (w *csWorkload) setup() {
	mustExec(w.t, w.c, `CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, body BLOB, score REAL);
		CREATE TABLE pairs(a TEXT NOT NULL, b INTEGER NOT NULL, v BLOB, PRIMARY KEY (a, b)) WITHOUT ROWID`)
	w.tables = []string{"items"}
}

// step runs one transaction; it reports whether it committed anything.
func (w *csWorkload) step() bool {
	ctx := context.Background()
	if err := w.c.Begin(ctx); err != nil {
		w.t.Fatal(err)
	}
	switch w.r.IntN(20) {
	case 0:
		name := fmt.Sprintf("extra%d", len(w.tables))
		mustExec(w.t, w.c, fmt.Sprintf("CREATE TABLE %s(k INTEGER PRIMARY KEY, v TEXT)", name))
		w.tables = append(w.tables, name)
	case 1:
		w.cols++
		mustExec(w.t, w.c, fmt.Sprintf("ALTER TABLE items ADD COLUMN c%d INTEGER DEFAULT %d", w.cols, w.cols))
	case 2:
		if w.noKey {
			mustExec(w.t, w.c, "CREATE TABLE IF NOT EXISTS loose(x, y)")
			mustExec(w.t, w.c, "INSERT INTO loose VALUES(?, ?)", w.r.Int64(), "row")
		}
	}
	for range 1 + w.r.IntN(6) {
		id := w.r.Int64N(40)
		switch w.r.IntN(5) {
		case 0, 1:
			mustExec(w.t, w.c, "INSERT OR REPLACE INTO items(id, name, body, score) VALUES(?, ?, ?, ?)",
				id, fmt.Sprintf("n%d", w.r.IntN(1000)), []byte{byte(w.r.IntN(256)), 0, 1}, w.r.Float64())
		case 2:
			mustExec(w.t, w.c, "UPDATE items SET score = score + 1, name = ? WHERE id % 7 = ?", fmt.Sprint(w.r.IntN(9)), id%7)
		case 3:
			mustExec(w.t, w.c, "DELETE FROM items WHERE id = ?", id)
		case 4:
			mustExec(w.t, w.c, "INSERT OR REPLACE INTO pairs VALUES(?, ?, ?)", fmt.Sprint("k", id%5), id, []byte("v"))
			mustExec(w.t, w.c, "DELETE FROM pairs WHERE b = ?", w.r.Int64N(40))
		}
		if len(w.tables) > 1 && w.r.IntN(3) == 0 {
			tbl := w.tables[1+w.r.IntN(len(w.tables)-1)]
			mustExec(w.t, w.c, fmt.Sprintf("INSERT OR REPLACE INTO %s VALUES(?, ?)", tbl), w.r.Int64N(10), fmt.Sprint(w.r.Int()))
		}
	}
	if w.r.IntN(6) == 0 {
		if err := w.c.Rollback(ctx); err != nil {
			w.t.Fatal(err)
		}
		// A rolled-back schema change never happened.
		w.tables = w.tableNames()
		w.cols = len(queryAll(w.t, w.c, "SELECT 1 FROM pragma_table_info('items') WHERE name LIKE 'c%'"))
		return false
	}
	if err := w.c.Commit(ctx); err != nil {
		w.t.Fatal(err)
	}
	return true
}

func (w *csWorkload) tableNames() []string {
	names := []string{"items"}
	for _, r := range queryAll(w.t, w.c, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'extra%' ORDER BY rowid") {
		names = append(names, r[0].(string))
	}
	return names
}

// restoreFresh restores the bucket into a new connection.
func restoreFresh(t *testing.T, s *memstore.Store) (*Conn, *changeset.Result) {
	t.Helper()
	dst := openT(t, "", false)
	res, err := changeset.Restore(context.Background(), s, csCell, dst)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return dst, res
}

func TestChangesetLogRestoresEveryAcknowledgedCommit(t *testing.T) {
	for _, noKey := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("noKey=%v/seed=%d", noKey, seed), func(t *testing.T) {
				ctx := context.Background()
				s := memstore.New()
				lg, err := changeset.New(changeset.Options{Store: s, Logger: csQuiet, MinSnapshotBytes: 2048})
				if err != nil {
					t.Fatal(err)
				}
				src := openT(t, "src.db", false)
				cl, err := lg.Open(ctx, openReq(csCell, 5, src, false))
				if err != nil {
					t.Fatal(err)
				}
				if cl.NeedsImage() {
					t.Fatal("the changeset log reads the connection; it needs no image")
				}
				w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(seed, 77)), noKey: noKey}
				w.setup()
				var seq uint64
				var inFlight []durability.Durable
				appendOne := func() {
					seq++
					inFlight = append(inFlight, cl.Append(durability.Commit{Seq: seq}))
				}
				appendOne() // the schema
				for i := 0; i < 120; i++ {
					if w.step() {
						appendOne()
					}
					// Sometimes acknowledge at once, sometimes let commits pile
					// up behind an upload (group commit).
					if w.r.IntN(4) != 0 {
						continue
					}
					for _, d := range inFlight {
						if err := waitDurable(t, d); err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
					}
					inFlight = nil
					dst, res := restoreFresh(t, s)
					if res.Epoch != 5 {
						t.Fatalf("restored epoch %d", res.Epoch)
					}
					if got, want := dumpAll(t, dst), dumpAll(t, src); !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d: restored rows differ\n got %v\nwant %v", i, got, want)
					}
				}
				if err := cl.Close(ctx, true); err != nil {
					t.Fatal(err)
				}
				for _, d := range inFlight {
					if err := waitDurable(t, d); err != nil {
						t.Fatal(err)
					}
				}
				// Open(restore) on a fresh connection, as a new owner would.
				dst := openT(t, "", false)
				cl2, err := lg.Open(ctx, openReq(csCell, 6, dst, true))
				if err != nil {
					t.Fatal(err)
				}
				defer cl2.Close(ctx, false)
				if got, want := dumpAll(t, dst), dumpAll(t, src); !reflect.DeepEqual(got, want) {
					t.Fatalf("Open(restore) rows differ\n got %v\nwant %v", got, want)
				}
			})
		}
	}
}

// A second log on the same epoch (lease.None keeps epoch 0) must not be
// confused by the first one's files.
func TestChangesetLogReopensSameEpoch(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	src := openT(t, "src.db", false)
	w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(9, 9))}
	w.setup()
	for round := 0; round < 3; round++ {
		cl, err := lg.Open(ctx, openReq(csCell, 0, src, false))
		if err != nil {
			t.Fatal(err)
		}
		n := 5 + 10*(2-round) // earlier logs write more files than later ones
		for i := 0; i < n; i++ {
			if w.step() {
				if err := waitDurable(t, cl.Append(durability.Commit{Seq: uint64(i + 1)})); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cl.Close(ctx, true); err != nil {
			t.Fatal(err)
		}
		dst, _ := restoreFresh(t, s)
		if got, want := dumpAll(t, dst), dumpAll(t, src); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: restored rows differ\n got %v\nwant %v", round, got, want)
		}
	}
}

// A crash fails what was not uploaded; whatever was acknowledged restores.
func TestChangesetLogCrashKeepsAcknowledged(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	src := openT(t, "src.db", false)
	cl, err := lg.Open(ctx, openReq(csCell, 1, src, false))
	if err != nil {
		t.Fatal(err)
	}
	w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(4, 4))}
	w.setup()
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 1})); err != nil {
		t.Fatal(err)
	}
	for !w.step() {
	}
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 2})); err != nil {
		t.Fatal(err)
	}
	acked := dumpAll(t, src)
	if err := cl.Close(ctx, false); err != nil {
		t.Fatal(err)
	}
	if d := cl.Append(durability.Commit{Seq: 3}); !errors.Is(waitDurable(t, d), changeset.ErrClosed) {
		t.Fatalf("Append after a crash: %v", d.Err())
	}
	dst, _ := restoreFresh(t, s)
	if got := dumpAll(t, dst); !reflect.DeepEqual(got, acked) {
		t.Fatalf("restored rows differ from the acknowledged ones\n got %v\nwant %v", got, acked)
	}
}

// noSessions hides the connection's session extension.
type noSessions struct{ driver.Conn }

func TestChangesetLogNeedsSessions(t *testing.T) {
	lg, _ := changeset.New(changeset.Options{Store: memstore.New(), Logger: csQuiet})
	_, err := lg.Open(context.Background(), openReq(csCell, 1, noSessions{openT(t, "", false)}, false))
	var nse *changeset.NoSessionsError
	if !errors.Is(err, changeset.ErrNoSessions) || !errors.As(err, &nse) {
		t.Fatalf("Open without sessions: %v", err)
	}
	if _, err := changeset.Restore(context.Background(), memstore.New(), csCell, noSessions{}); !errors.Is(err, changeset.ErrNoSessions) {
		t.Fatalf("Restore without sessions: %v", err)
	}
	if _, err := changeset.Restore(context.Background(), memstore.New(), csCell, openT(t, "", false)); !errors.Is(err, changeset.ErrNothingToRestore) {
		t.Fatalf("Restore from an empty bucket: %v", err)
	}
}

// failingPuts refuses every Put once down is set.
type failingPuts struct {
	*memstore.Store
	down atomic.Bool
}

func (f *failingPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if f.down.Load() {
		return "", errors.New("bucket unreachable")
	}
	return f.Store.Put(ctx, key, data, opts)
}

// A failed upload fails its commit and every later one.
func TestChangesetLogUploadFailureBreaksTheChain(t *testing.T) {
	ctx := context.Background()
	s := &failingPuts{Store: memstore.New()}
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet, UploadRetries: -1})
	src := openT(t, "src.db", false)
	cl, err := lg.Open(ctx, openReq(csCell, 1, src, false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, false)
	w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(5, 5))}
	w.setup()
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 1})); err != nil {
		t.Fatal(err)
	}
	s.down.Store(true)
	for !w.step() {
	}
	var ue *changeset.UploadError
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 2})); !errors.As(err, &ue) {
		t.Fatalf("commit during an outage: %v", err)
	}
	s.down.Store(false)
	for !w.step() {
	}
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 3})); err == nil {
		t.Fatal("a commit after a failed upload was acknowledged")
	}
}

// flakyPuts fails the next failNext puts, counting every put.
type flakyPuts struct {
	store.Store
	failNext atomic.Int32
	puts     atomic.Int32
}

func (f *flakyPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	f.puts.Add(1)
	if f.failNext.Add(-1) >= 0 {
		return "", errors.New("bucket unreachable")
	}
	return f.Store.Put(ctx, key, data, opts)
}

// A failed upload is retried, UploadRetries times, before its commit
// fails.
func TestChangesetLogRetriesAFailedUpload(t *testing.T) {
	ctx := context.Background()
	s := &flakyPuts{Store: memstore.New()}
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet, UploadRetries: 2, RetryDelay: time.Millisecond})
	src := openT(t, "src.db", false)
	cl, err := lg.Open(ctx, openReq(csCell, 1, src, false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, false)
	w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(6, 6))}
	w.setup()
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 1})); err != nil {
		t.Fatal(err)
	}
	for !w.step() {
	}
	before := s.puts.Load()
	s.failNext.Store(2)
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 2})); err != nil {
		t.Fatalf("a commit whose upload succeeded on the third attempt failed: %v", err)
	}
	if n := s.puts.Load() - before; n != 3 {
		t.Fatalf("%d puts for one upload, want 3", n)
	}
}

// Restore refuses a chain with a missing file or a damaged one.
func TestChangesetRestoreRefusesGapsAndDamage(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet})
	src := openT(t, "src.db", false)
	cl, err := lg.Open(ctx, openReq(csCell, 2, src, false))
	if err != nil {
		t.Fatal(err)
	}
	w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(6, 6))}
	w.setup()
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 1})); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 4; i++ {
		mustExec(t, src, "INSERT INTO items(id, name) VALUES(?, 'x')", i)
		if err := waitDurable(t, cl.Append(durability.Commit{Seq: uint64(i)})); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close(ctx, true)
	middle := changeset.Key(csCell, 2, 3, 3, false)
	obj, err := s.Get(ctx, middle)
	if err != nil {
		t.Fatalf("expected one file per acknowledged commit: %v", err)
	}

	bad := append([]byte(nil), obj.Data...)
	bad[len(bad)/2] ^= 1
	s.Put(ctx, middle, bad, store.PutOptions{})
	var ce *changeset.CorruptError
	if _, err := changeset.Restore(ctx, s, csCell, openT(t, "", false)); !errors.As(err, &ce) || ce.Key != middle {
		t.Fatalf("damaged file: %v", err)
	}

	s.Delete(ctx, middle)
	var ge *changeset.GapError
	if _, err := changeset.Restore(ctx, s, csCell, openT(t, "", false)); !errors.As(err, &ge) || ge.After != 2 || ge.NextMinSeq != 4 {
		t.Fatalf("missing file: %v", err)
	}
}

// countingPuts counts the bytes uploaded.
type countingPuts struct {
	*memstore.Store
	bytes atomic.Int64
}

func (c *countingPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	c.bytes.Add(int64(len(data)))
	return c.Store.Put(ctx, key, data, opts)
}

// BenchmarkCellLogSmallUpdates compares the changeset log with the LTX log
// (page capture) on the workload the changeset log is meant for: each
// commit changes one small row of a table spread over many pages. It
// reports the bytes uploaded per commit next to the time per acknowledged
// commit; run both in one invocation to compare.
func BenchmarkCellLogSmallUpdates(b *testing.B) {
	for _, mode := range []string{"ltx", "changeset"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			dc, err := New(Options{}).Open(ctx, driver.Config{Path: filepath.Join(b.TempDir(), "db"), PageCapture: mode == "ltx"})
			if err != nil {
				b.Fatal(err)
			}
			defer dc.Close()
			if _, err := dc.Exec(ctx, "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, n INTEGER)"); err != nil {
				b.Fatal(err)
			}
			if _, err := dc.Exec(ctx, "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 2000) INSERT INTO items SELECT i, printf('%0200d', i), 0 FROM seq"); err != nil {
				b.Fatal(err)
			}
			s := &countingPuts{Store: memstore.New()}
			var lg durability.Log
			if mode == "ltx" {
				lg, err = ltxlog.New(ltxlog.Options{Store: s, Logger: csQuiet, CompactAfter: -1})
			} else {
				lg, err = changeset.New(changeset.Options{Store: s, Logger: csQuiet})
			}
			if err != nil {
				b.Fatal(err)
			}
			cl, err := lg.Open(ctx, openReq(csCell, 1, dc, false))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close(ctx, false)
			pc, _ := dc.(driver.PageCapturer)
			commit := func(seq uint64, id int) error {
				if _, err := dc.Exec(ctx, "UPDATE items SET n = n + 1 WHERE id = ?", id); err != nil {
					return err
				}
				c := durability.Commit{Seq: seq}
				if pc != nil {
					cs, err := pc.TakeCommits(ctx)
					if err != nil || len(cs) != 1 {
						return fmt.Errorf("captured %d commits: %v", len(cs), err)
					}
					c.Pages = &cs[0]
				}
				d := cl.Append(c)
				<-d.Done()
				return d.Err()
			}
			// The first commit of an epoch uploads the whole database in
			// both logs; leave it out of the measurement.
			if err := commit(1, 1); err != nil {
				b.Fatal(err)
			}
			s.bytes.Store(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := commit(uint64(i+2), 1+i%2000); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(s.bytes.Load())/float64(b.N), "upload-B/commit")
		})
	}
}

// hangingPuts never answers a Put until its context ends.
type hangingPuts struct{ *memstore.Store }

func (h hangingPuts) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// A bucket that stops answering fails the commit instead of holding it.
func TestChangesetLogUploadTimeout(t *testing.T) {
	ctx := context.Background()
	lg, _ := changeset.New(changeset.Options{Store: hangingPuts{memstore.New()}, Logger: csQuiet, UploadRetries: -1, UploadTimeout: 50 * time.Millisecond})
	src := openT(t, "", false)
	cl, err := lg.Open(ctx, openReq(csCell, 1, src, false))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx, false)
	mustExec(t, src, "CREATE TABLE t(k INTEGER PRIMARY KEY)")
	if err := waitDurable(t, cl.Append(durability.Commit{Seq: 1})); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("upload to a silent bucket: %v", err)
	}
}

// openReq is the request the runtime makes for conn: pages captured when
// conn was opened with capture, and what it captured so far taken and
// dropped first (it is in the log's base).
func openReq(cell string, epoch uint64, conn driver.Conn, restore bool) durability.OpenRequest {
	capture := false
	if pc, ok := conn.(driver.PageCapturer); ok {
		_, err := pc.TakeCommits(context.Background())
		capture = err == nil
	}
	return durability.OpenRequest{Cell: cell, Epoch: epoch, Conn: conn, Restore: restore, PagesCaptured: capture}
}
