package tests

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/modernc"
)

// TestModesRestoreProcessMemory (not timed): `cellb restore` of a
// changeset log and of a backup of a 16 MiB cell (and, with
// CELLB_MEMTEST_MIB, a larger one) peaks at most restoreBound above what
// the cellb binary holds doing nothing: the changeset log's snapshot
// streams into the scratch database's file and out of it page by page, a
// backup streams into the output file. The logs are written on modernc
// (WAL, page capture) into a local-files bucket. The changeset restore
// also peaks at most at restorePeak (the goal, counted from
// nothing). CELLB_BASELINE_CELLB names another cellb binary (say, one built
// from before this change) whose restore of the same bucket is measured
// beside it, for the record.
func TestModesRestoreProcessMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cellb and writes 16 MiB cells")
	}
	const restoreBound = 16 * mib // a backup: above cellb --help
	const restorePeak = 64 * mib  // the changeset log: from nothing
	const sizeSlack = 24 * mib
	sizes := []int{16}
	if v := envInt("CELLB_MEMTEST_MIB", 0); v > 16 {
		sizes = append(sizes, v)
	}
	bin := cellbBinary(t)
	_, idle := timedRun(t, bin, "--help")
	for _, m := range durabilityModes() {
		if m.Name == "ltx" {
			continue // TestLargeCellProcessMemory
		}
		var growth []int64
		for _, size := range sizes {
			dir := t.TempDir()
			key := writeModeCell(t, dir, m, size)
			out := filepath.Join(dir, "restored.db")
			_, peak := timedRun(t, bin, "restore", "--quiet", "--from", m.Name, filepath.Join(dir, "bucket"), key, out)
			st, err := os.Stat(out)
			if err != nil || st.Size() < int64(size)*1_000_000 {
				t.Fatalf("%s, %d MiB: cellb restore wrote %v (%v)", m.Name, size, st, err)
			}
			g := peak - idle
			t.Logf("%s, %d MiB cell: cellb restore peak %.1f MiB (cellb --help %.1f MiB: growth %.1f MiB)", m.Name, size, mb(peak), mb(idle), mb(g))
			if base := os.Getenv("CELLB_BASELINE_CELLB"); base != "" {
				_, bpeak := timedRun(t, base, "restore", "--quiet", "--force", "--from", m.Name, filepath.Join(dir, "bucket"), key, out)
				t.Logf("%s, %d MiB cell: baseline %s restore peak %.1f MiB", m.Name, size, base, mb(bpeak))
			}
			switch {
			case m.Name == "backup" && g > restoreBound:
				t.Errorf("%s, %d MiB cell: cellb restore peaked %.1f MiB above cellb --help, bound %d MiB", m.Name, size, mb(g), restoreBound/mib)
			case peak > restorePeak:
				t.Errorf("%s, %d MiB cell: cellb restore peaked at %.1f MiB, bound %d MiB", m.Name, size, mb(peak), restorePeak/mib)
			}
			growth = append(growth, g)
		}
		if n := len(growth) - 1; n > 0 && growth[n] > growth[0]+sizeSlack {
			t.Errorf("%s: cellb restore grew by %.1f MiB for %d MiB, %.1f MiB for %d MiB", m.Name, mb(growth[n]), sizes[n], mb(growth[0]), sizes[0])
		}
	}
}

// writeModeCell writes a cell of mib MiB (1 MB random blobs, which do not
// compress) through mode's log into dir/bucket and returns its key.
func writeModeCell(t *testing.T, dir string, m durability.Mode, mib int) string {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "bucket"), 0o755); err != nil {
		t.Fatal(err)
	}
	bucket, err := fsstore.Open(filepath.Join(dir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(bucket)
	lg, err := m.Open(durability.OpenOptions{Store: bucket, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := modernc.New(modernc.Options{}).Open(ctx, driver.Config{Path: filepath.Join(dir, "src.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	pc := dc.(driver.PageCapturer)
	key := cell.CellKey("Big", cell.IDFromName("modes", "Big", "big"))
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: key, Epoch: 1, Conn: dc, PagesCaptured: true})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	exec := func(q string) {
		if _, err := dc.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
		cs, err := pc.TakeCommits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cs {
			seq++
			d := cl.Append(durability.Commit{Seq: seq, Pages: &cs[i]})
			select {
			case <-d.Done():
			case <-time.After(time.Minute):
				t.Fatal("a commit never became durable")
			}
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	exec("CREATE TABLE t(k INTEGER PRIMARY KEY, b BLOB)")
	for i := 0; i < mib; i++ {
		exec("INSERT INTO t(b) VALUES (randomblob(1000000))")
	}
	exec("UPDATE t SET b = x'01' WHERE k = 1")
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	return key
}
