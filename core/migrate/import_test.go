package migrate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/internal/testvectors"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

const cellKey = "Notes:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// replica is the Litestream file replica of the shared test vectors (six
// LTX files at level 0), copied into a bucket as Litestream lays it out.
func replica(t *testing.T) store.Store {
	t.Helper()
	dir := filepath.Join(testvectors.Dir(t, "celld-ltx-golden"), "replica")
	s := memstore.New()
	files, err := filepath.Glob(filepath.Join(dir, "ltx", "0", "*.ltx"))
	if err != nil || len(files) != 6 {
		t.Fatalf("the replica's files: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(t.Context(), "ltx/0/"+filepath.Base(f), data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// imageBytes reads a whole (small) image.
func imageBytes(t *testing.T, im *Image) []byte {
	t.Helper()
	b := make([]byte, im.Size())
	if _, err := im.f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// The replica's newest state (TXID 6) imported into a fleet's bucket is
// what the cell's log restores, from the epoch the import took (1: the
// cell was new), and the cell is left released at that epoch with the
// temporary node gone, so the next activation takes epoch 2 and restores
// it.
func TestImportLitestreamReplicaIntoFleet(t *testing.T) {
	ctx := t.Context()
	im, err := RestoreLitestream(ctx, replica(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if im.PageSize() != 4096 || im.Pages() != 5 {
		t.Fatalf("restored %d pages of %d bytes, want 5 of 4096", im.Pages(), im.PageSize())
	}
	want := imageBytes(t, im)
	bucket := memstore.New()
	res, err := Import(ctx, Target{Bucket: bucket}, cellKey, im)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epoch != 1 || res.Key != ltx.Key(cellKey, 1, 0, 1, 1) {
		t.Fatalf("imported at epoch %d as %s", res.Epoch, res.Key)
	}
	got, err := ltxlog.Restore(ctx, bucket, cellKey, ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Image, want) {
		t.Fatal("the cell restores other bytes than the replica's newest state")
	}
	obj, err := bucket.Get(ctx, layout.OwnKey(cellKey))
	if err != nil {
		t.Fatal(err)
	}
	if own, _ := layout.DecodeOwnRecord(obj.Key, obj.Data); own != (layout.OwnRecord{Node: "", Epoch: 1}) {
		t.Fatalf("own.json after the import: %s", obj.Data)
	}
	page, err := store.ListAll(ctx, bucket, store.ListOptions{Prefix: layout.NodesPrefix})
	if err != nil || len(page.Objects) != 0 {
		t.Fatalf("node leases left: %v %v", page.Objects, err)
	}
	// The next activation takes epoch 2 and restores the import.
	n, err := fleet.Join(ctx, fleet.Options{Store: bucket})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	g, err := n.TryAcquire(ctx, cellKey)
	if err != nil || g.Epoch() != 2 {
		t.Fatalf("the next activation: %v, %v", g, err)
	}
}

// A cell that holds anything is refused before anything is written: a
// log of any epoch in the bucket, or on one host a local database; a cell
// a live node holds cannot be taken.
func TestImportRefusesAWrittenCell(t *testing.T) {
	ctx := t.Context()
	src := writeDatabase(t, 3)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, s store.Store, dataDir string)
	}{
		{"ltx", func(t *testing.T, s store.Store, _ string) {
			s.Put(ctx, ltx.Key(cellKey, 4, 1, 1, 9), []byte("x"), store.PutOptions{})
		}},
		{"changeset", func(t *testing.T, s store.Store, _ string) {
			s.Put(ctx, layout.CellPrefix(cellKey)+"changesets/e1/x", []byte("x"), store.PutOptions{})
		}},
		{"local database", func(t *testing.T, _ store.Store, dataDir string) {
			p, _ := cell.DatabasePath(filepath.Join(dataDir, "cells"), cellKey)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, nil, 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bucket, dataDir := memstore.New(), t.TempDir()
			c.setup(t, bucket, dataDir)
			im, err := OpenDatabase(src)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			before, _ := store.ListAll(ctx, bucket, store.ListOptions{})
			_, err = Import(ctx, Target{Bucket: bucket, DataDir: dataDir}, cellKey, im)
			var cw *CellWrittenError
			if !errors.As(err, &cw) || !errors.Is(err, ErrCellWritten) {
				t.Fatalf("import into a written cell: %v, want a *CellWrittenError", err)
			}
			after, _ := store.ListAll(ctx, bucket, store.ListOptions{})
			if len(after.Objects) != len(before.Objects) {
				t.Fatalf("the refused import wrote: %v", after.Objects)
			}
		})
	}
	t.Run("held", func(t *testing.T) {
		bucket := memstore.New()
		n, err := fleet.Join(ctx, fleet.Options{Store: bucket, Node: "node_live"})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close(context.Background())
		if _, err := n.TryAcquire(ctx, cellKey); err != nil {
			t.Fatal(err)
		}
		im, err := OpenDatabase(src)
		if err != nil {
			t.Fatal(err)
		}
		defer im.Close()
		_, err = Import(ctx, Target{Bucket: bucket}, cellKey, im)
		var owned *lease.CellOwnedElsewhereError
		if !errors.As(err, &owned) || owned.Owner != "node_live" {
			t.Fatalf("import into a held cell: %v", err)
		}
	})
}

// On one host the import takes the cell's shard (its epoch recorded
// first), and the next process's grant is newer, so its restore reads the
// import (a database file here, of 3 pages).
func TestImportDatabaseOnOneHost(t *testing.T) {
	ctx := t.Context()
	dataDir := t.TempDir()
	bucket := memstore.New()
	im, err := OpenDatabase(writeDatabase(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	want := imageBytes(t, im)
	res, err := Import(ctx, Target{Bucket: bucket, DataDir: dataDir}, cellKey, im)
	if err != nil {
		t.Fatal(err)
	}
	l, err := shard.Open(filepath.Join(dataDir, "shards"), SingleHostShards)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g, err := l.TryAcquire(ctx, cellKey)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release(ctx)
	if g.Epoch() <= res.Epoch {
		t.Fatalf("the next grant's epoch %d is not above the import's %d", g.Epoch(), res.Epoch)
	}
	got, err := ltxlog.Restore(ctx, bucket, cellKey, ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot's page 1 is in WAL mode (as celld writes it): bytes
	// 18 and 19 are 2.
	want[18], want[19] = 2, 2
	if !bytes.Equal(got.Image, want) {
		t.Fatal("the cell restores other bytes than the imported file")
	}
}

// writeDatabase writes a file of pages 4096-byte pages with a SQLite
// header (page n filled with byte n) and returns its path.
func writeDatabase(t *testing.T, pages int) string {
	t.Helper()
	img := make([]byte, pages*4096)
	for i := 1; i < pages; i++ {
		for j := range 4096 {
			img[i*4096+j] = byte(i)
		}
	}
	copy(img, sqliteMagic)
	binary.BigEndian.PutUint16(img[16:], 4096)
	img[18], img[19] = 1, 1
	p := filepath.Join(t.TempDir(), "app.db")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A database file beside a non-empty -wal or -journal is refused, and so
// is a file that is not a database.
func TestOpenDatabaseRefuses(t *testing.T) {
	for _, c := range []struct{ side, live, done string }{
		// A WAL with a frame after its header; one with its header alone.
		{"-wal", strings.Repeat("w", 32+24+4096), strings.Repeat("w", 32)},
		// A journal with its magic; one whose header was zeroed (PERSIST).
		{"-journal", string(journalMagic) + strings.Repeat("j", 600), strings.Repeat("\x00", 600)},
	} {
		p := writeDatabase(t, 2)
		os.WriteFile(p+c.side, []byte(c.live), 0o644)
		var busy *SourceBusyError
		if _, err := OpenDatabase(p); !errors.As(err, &busy) || busy.Sidecar != p+c.side {
			t.Errorf("%s beside the file: %v", c.side, err)
		}
		for _, done := range []string{c.done, ""} {
			os.WriteFile(p+c.side, []byte(done), 0o644) // what SQLite leaves after a clean close
			im, err := OpenDatabase(p)
			if err != nil {
				t.Errorf("a finished %s of %d bytes: %v", c.side, len(done), err)
			} else {
				im.Close()
			}
		}
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"text":      bytes.Repeat([]byte("not a database "), 400),
		"truncated": func() []byte { b, _ := os.ReadFile(writeDatabase(t, 2)); return b[:5000] }(),
	} {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, data, 0o644)
		var nd *NotDatabaseError
		if _, err := OpenDatabase(p); !errors.As(err, &nd) {
			t.Errorf("%s: %v, want a *NotDatabaseError", name, err)
		}
	}
}
