package host

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/internal/testvectors"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// deadProcess leaves what a single host process killed with rows in its
// node log leaves: a cell's snapshot (golden TXID 1) in its prefix at
// epoch 3, TXIDs 2..6 in bundles, and the session's lock file, let go.
func deadProcess(t *testing.T, s store.Store, dataDir, cell string) string {
	t.Helper()
	ctx := context.Background()
	dir := localLogDir(dataDir)
	node, err := nodelog.LocalNodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := nodelog.OpenLocalSession(dir, node)
	if err != nil {
		t.Fatal(err)
	}
	files := make([][]byte, 6)
	for i := range files {
		p := filepath.Join(testvectors.Dir(t, "celld-ltx-golden"), "replica", "ltx", "0", ltx.Filename(ltx.TXID(i+1), ltx.TXID(i+1)))
		if files[i], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, ltx.Key(cell, 3, 0, 1, 1), files[0], store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	nl, err := nodelog.New(nodelog.Options{Store: s, Node: node, Generation: sess.Generation(), Confirmer: sess, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for x := 2; x <= 6; x++ {
		if err := nl.Submit(ctx, []nodelog.Row{{Cell: cell, CellEpoch: 3, TXID: ltx.TXID(x), Data: files[x-1]}}); err != nil {
			t.Fatal(err)
		}
	}
	nl.Close(ctx, false)
	sess.Close(false)
	return sess.Generation()
}

func singleHost(t *testing.T, dataDir string, s store.Store, perCell bool) *Host {
	t.Helper()
	h, err := New(context.Background(), Config{
		Driver: noDriver{}, DataDir: dataDir, Bucket: s, Mode: ltxlog.Mode(), Ownership: SingleHost,
		SingleHost: SingleHostConfig{PerCellLog: perCell},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSingleHostFoldsDeadLogsAtStart: two hosts share a data directory.
// The first, started after a process died with rows in its node log,
// folds that log into the cell's prefix before New returns, and runs a
// node log of its own; the second leaves the first's live session alone
// (its lock is held), and a host with PerCellLog folds a dead log too.
// A clean Close removes the session's lock file.
func TestSingleHostFoldsDeadLogsAtStart(t *testing.T) {
	ctx := context.Background()
	const cell = "Counter:abc"
	for _, perCell := range []bool{false, true} {
		s := memstore.New()
		data := t.TempDir()
		dead := deadProcess(t, s, data, cell)
		h1 := singleHost(t, data, s, perCell)
		if top, err := nodelog.Covered(ctx, s, cell, 3); err != nil || top != 6 {
			t.Fatalf("perCell %v: the cell's prefix covers TXID %d (%v) after New; want the dead log's 6", perCell, top, err)
		}
		if _, err := os.Stat(filepath.Join(localLogDir(data), dead+".lock")); !os.IsNotExist(err) {
			t.Fatalf("perCell %v: the dead session's lock file is left: %v", perCell, err)
		}
		if (h1.NodeLog() == nil) != perCell {
			t.Fatalf("perCell %v: node log %v", perCell, h1.NodeLog())
		}
		if perCell {
			h1.Close(ctx)
			continue
		}
		own := h1.localLog.session.Generation()
		h2 := singleHost(t, data, s, false)
		if _, err := os.Stat(filepath.Join(localLogDir(data), own+".lock")); err != nil {
			t.Fatalf("the second host took the first's live session for a dead one: %v", err)
		}
		if st, _ := nodelog.LocalState(localLogDir(data), own); st != nodelog.LocalOpen {
			t.Fatalf("the first host's session is %s; want open", st)
		}
		for _, h := range []*Host{h2, h1} {
			if err := h.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(localLogDir(data), "*.lock")); len(left) != 0 {
			t.Fatalf("lock files left after clean closes: %v", left)
		}
	}
}
