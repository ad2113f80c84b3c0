package wasm

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// TestUploadedSnapshotIsWALFormat: this driver keeps its files in
// rollback-journal mode (header bytes 18/19 = 1/1), yet every LTX file the
// log uploads for it carries page 1 in WAL mode (2/2), as celld's do; the
// chain restores into a rollback-journal database again, with its rows.
func TestUploadedSnapshotIsWALFormat(t *testing.T) {
	ctx := t.Context()
	c := openTest(t, filepath.Join(t.TempDir(), "c.db"), false)
	mustExec(t, c, "CREATE TABLE t(v); INSERT INTO t VALUES ('one')")
	s := memstore.New()
	lg, err := ltxlog.New(ltxlog.Options{Store: s, CompactAfter: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := lg.Open(ctx, durability.OpenRequest{Cell: "Snap:x", Epoch: 1, Conn: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"two", "three"} {
		mustExec(t, c, "INSERT INTO t VALUES (?)", v)
		img, err := c.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if img[offWriteVersion] != journalModeRollback || img[offReadVersion] != journalModeRollback {
			t.Fatalf("the local file is not in rollback-journal mode: bytes 18/19 = %d/%d", img[offWriteVersion], img[offReadVersion])
		}
		d := cl.Append(durability.Commit{Image: img})
		<-d.Done()
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: "cells/Snap:x/ltx/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 2 {
		t.Fatalf("%d LTX files, want 2", len(page.Objects))
	}
	for _, o := range page.Objects {
		obj, err := s.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ltx.Decode(obj.Data)
		if err != nil {
			t.Fatal(err)
		}
		if f.Pages[0].Pgno != 1 {
			t.Fatalf("%s does not carry page 1", o.Key)
		}
		if p := f.Pages[0].Data; p[offWriteVersion] != journalModeWAL || p[offReadVersion] != journalModeWAL {
			t.Errorf("%s: page 1 has bytes 18/19 = %d/%d, want 2/2 as celld writes", o.Key, p[offWriteVersion], p[offReadVersion])
		}
	}
	res, err := ltxlog.Restore(ctx, s, "Snap:x", ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := openTest(t, filepath.Join(t.TempDir(), "r.db"), false)
	if err := r.Restore(ctx, res.Image); err != nil {
		t.Fatal(err)
	}
	want := queryRows(t, c, "PRAGMA journal_mode")[0][0]
	if mode := queryRows(t, r, "PRAGMA journal_mode"); mode[0][0] != want {
		t.Errorf("restored database in journal mode %v, want the driver's own (%v)", mode[0][0], want)
	}
	if got := queryRows(t, r, "SELECT count(*) FROM t"); got[0][0] != int64(3) {
		t.Errorf("restored rows: %v", got)
	}
}
