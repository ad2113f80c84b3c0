package tests

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestNodeLogReleasedCellRestoresAsBefore: a cell written through a fleet
// node's node log (its commits in bundles, tiered into its prefix 5 at a
// time, compacted) and then released leaves a complete per-cell prefix:
// CellB's restore of the prefix alone and `litestream restore` of it laid
// out as a file replica (when a litestream v0.5 binary is at hand:
// CELLB_LITESTREAM or PATH) give the database the cell had, byte for
// byte, and no bundle is left once the node log closed.
func TestNodeLogReleasedCellRestoresAsBefore(t *testing.T) {
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
	node, err := fleet.Join(ctx, fleet.Options{Store: s, Node: "node_r", Logger: quietLogger(), NodeLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close(ctx)
	nl, err := nodelog.New(nodelog.Options{Store: s, Node: node.ID(), Generation: node.Generation(), Confirmer: node, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const cellKey = "Prop:nodelog"
	g, err := node.TryAcquire(ctx, cellKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := wasm.New().Open(ctx, driver.Config{Path: filepath.Join(dir, "c.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, b BLOB)"); err != nil {
		t.Fatal(err)
	}
	lg, _ := ltxlog.New(ltxlog.Options{Store: s, NodeLog: nl, TierAfterRows: 5, CompactAfter: 3, RangeFanout: 2, Logger: quietLogger()})
	cl, err := lg.Open(ctx, openReq(cellKey, g.Epoch(), conn, false))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(21, 55))
	commits := 0
	for i := 1; i <= 60; i++ {
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
		commits += len(futures)
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if bs, err := nodelog.ListBundles(ctx, s, node.ID(), node.Generation()); err != nil || len(bs) != 0 {
		t.Fatalf("%d bundles left after the node log closed (%v)", len(bs), err)
	}
	want, err := conn.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The bucket carries page 1 in WAL mode (ltx.WALHeaderPage).
	want = append(ltx.WALHeaderPage(1, want[:100]), want[100:]...)
	res, err := ltxlog.Restore(ctx, s, cellKey, ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, ranges, _ := countLTX(t, s, cellKey)
	// TXIDs count the log's groups of commits (at most the commits).
	if res.TXID == 0 || int(res.TXID) > commits || !bytes.Equal(res.Image, want) {
		t.Fatalf("CellB's restore of the released prefix: TXID %d (of %d commits), the same database: %v", res.TXID, commits, bytes.Equal(res.Image, want))
	}
	ls := litestreamBinary()
	if ls == "" {
		t.Logf("no litestream binary: CellB's restore checked alone (%d files, %d range files)", files, ranges)
		return
	}
	replica := litestreamReplica(t, bucketDir, cellKey, filepath.Join(dir, "replica"))
	out := filepath.Join(dir, "litestream.db")
	timedRun(t, ls, "restore", "-o", out, replica)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, res.Image) {
		t.Fatalf("litestream restored %d bytes, CellB %d: not the same", len(got), len(res.Image))
	}
	t.Logf("%d files, %d range files: litestream and CellB restore the same %d bytes at TXID %d", files, ranges, len(got), res.TXID)
}
