package tests

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestLitestreamRestoresRangeCompactedChains: chains of the epoch's
// snapshot, level-1 range files (some merged into larger ones), full
// merges and level-0 files — what compaction now leaves — laid out as a
// litestream file replica, restore with `litestream restore` (v0.5, the
// baseline of docs/benchmarks.md) to the same bytes as CellB's restore,
// after random SQL workloads (growing and shrinking the database) of
// several lengths. Skipped without a litestream binary (CELLB_LITESTREAM
// or PATH).
func TestLitestreamRestoresRangeCompactedChains(t *testing.T) {
	ls := litestreamBinary()
	if ls == "" {
		t.Skip("no litestream binary: set CELLB_LITESTREAM or put litestream v0.5 on PATH")
	}
	withRanges := 0
	// Percent 1<<20: no full merge, the snapshot at level 0 starts the
	// chain; 300: full merges too.
	for i, c := range []struct{ steps, percent int }{{20, 1 << 20}, {41, 1 << 20}, {33, 300}, {47, 300}, {61, 300}, {80, 300}} {
		t.Run(fmt.Sprintf("steps=%d/percent=%d", c.steps, c.percent), func(t *testing.T) {
			if litestreamAfter(t, ls, uint64(i), c.steps, c.percent) > 0 {
				withRanges++
			}
		})
	}
	if withRanges < 4 {
		t.Fatalf("only %d layouts held a range file", withRanges)
	}
}

// litestreamAfter runs steps of the workload into a new bucket, closes the
// log (a final close: compaction done), compares both restores and returns
// how many range files the layout held.
func litestreamAfter(t *testing.T, ls string, seed uint64, steps, percent int) int {
	ctx := context.Background()
	dir := t.TempDir()
	bucketDir := filepath.Join(dir, "bucket")
	if err := os.Mkdir(bucketDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := fsstore.Open(bucketDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	conn, err := wasm.New().Open(ctx, driver.Config{Path: filepath.Join(dir, "c.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, b BLOB)"); err != nil {
		t.Fatal(err)
	}
	const cellKey = "Prop:litestream"
	lg, _ := ltxlog.New(ltxlog.Options{Store: s, CompactAfter: 3, RangeFanout: 2, FullMergePercent: percent, Logger: quietLogger()})
	cl, err := lg.Open(ctx, openReq(cellKey, 0, conn, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 55))
	for i := 1; i <= steps; i++ {
		if err := sqlStep(ctx, conn, r); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		futures, err := feed(ctx, conn, cl, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range futures {
			<-f.Done()
			if f.Err() != nil {
				t.Fatal(f.Err())
			}
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	files, ranges, snapshot := countLTX(t, s, cellKey)
	replica := litestreamReplica(t, bucketDir, cellKey, filepath.Join(dir, "replica"))
	out := filepath.Join(dir, "litestream.db")
	timedRun(t, ls, "restore", "-o", out, replica)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ltxlog.Restore(ctx, s, cellKey, ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, res.Image) {
		t.Fatalf("%d files, %d range files: litestream restored %d bytes, CellB %d (TXID %d), not the same", files, ranges, len(got), len(res.Image), res.TXID)
	}
	t.Logf("%d files, %d range files, level-0 snapshot starts the chain: %v; TXID %d, %d bytes: the same", files, ranges, snapshot, res.TXID, len(got))
	return ranges
}

// countLTX counts the cell's LTX files and the range files (level 1, not
// from TXID 1) among them, and reports whether the level-0 snapshot is
// there.
func countLTX(t *testing.T, s store.Store, cellKey string) (files, ranges int, snapshot bool) {
	t.Helper()
	page, err := store.ListAll(context.Background(), s, store.ListOptions{Prefix: ltx.CellPrefix(cellKey)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Objects {
		f, ok := ltx.ParseKey(o.Key)
		if !ok {
			continue
		}
		files++
		if f.Level == 1 && f.MinTXID > 1 {
			ranges++
		}
		snapshot = snapshot || (f.Level == 0 && f.MinTXID == 1)
	}
	return files, ranges, snapshot
}
