package durability_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

func TestModesPointInTime(t *testing.T) {
	ms := durability.Modes{{PointInTime: true}, {}, {PointInTime: true}}
	ms[0].Name, ms[1].Name, ms[2].Name = "a", "b", "c"
	if got := ms.PointInTime().Names(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("PointInTime() = %v, want [a c]", got)
	}
}

// imageMode restores image, or fails with err after writing part of it.
func imageMode(image []byte, err error) durability.Mode {
	return durability.Mode{Restore: func(_ context.Context, _ store.Store, cell string, _ durability.RestoreRequest, out durability.RestoreSink) (durability.Restored, error) {
		if err != nil {
			_, _ = out.WriteAt(image[:1], 0)
			return durability.Restored{}, err
		}
		return durability.Restored{From: "test " + cell}, durability.WriteImage(out, image)
	}}
}

// RestoreFile writes the image to the path and returns its size; a failed
// restore leaves the file that was there and no temporary file.
func TestRestoreFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	res, n, err := imageMode([]byte("restored image"), nil).RestoreFile(t.Context(), nil, "Room:a", durability.RestoreRequest{}, out)
	if err != nil || res.From != "test Room:a" || n != int64(len("restored image")) {
		t.Fatalf("RestoreFile = %+v, %d, %v", res, n, err)
	}
	if b, _ := os.ReadFile(out); string(b) != "restored image" {
		t.Fatalf("out.db holds %q", b)
	}
	boom := errors.New("boom")
	if _, _, err := imageMode([]byte("other"), boom).RestoreFile(t.Context(), nil, "Room:a", durability.RestoreRequest{}, out); !errors.Is(err, boom) {
		t.Fatalf("failed restore: err = %v, want boom", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "restored image" {
		t.Fatalf("a failed restore changed out.db to %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the directory holds %d entries after a failed restore, want only out.db", len(ents))
	}
}

// pathDriver records the paths it is asked to open and fails each open.
type pathDriver struct{ paths []string }

var errNoOpen = errors.New("not opened")

func (d *pathDriver) Name() string                      { return "path" }
func (d *pathDriver) Capabilities() driver.Capabilities { return driver.Capabilities{} }
func (d *pathDriver) Open(_ context.Context, cfg driver.Config) (driver.Conn, error) {
	d.paths = append(d.paths, cfg.Path)
	return nil, errNoOpen
}

// ScratchNextTo makes nothing until the scratch is opened, then a
// directory next to the output that cleanup removes.
func TestScratchNextTo(t *testing.T) {
	dir := t.TempDir()
	d := &pathDriver{}
	open, cleanup := durability.ScratchNextTo(filepath.Join(dir, "out.db"), d)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("ScratchNextTo made %d entries before the scratch was opened", len(ents))
	}
	cleanup() // nothing to remove yet
	if _, err := open(t.Context()); !errors.Is(err, errNoOpen) {
		t.Fatalf("open: %v", err)
	}
	if _, err := open(t.Context()); !errors.Is(err, errNoOpen) {
		t.Fatalf("second open: %v", err)
	}
	if len(d.paths) != 2 || d.paths[0] != d.paths[1] || filepath.Base(d.paths[0]) != "cell.db" || filepath.Dir(filepath.Dir(d.paths[0])) != dir {
		t.Fatalf("opened %v, want one cell.db in one directory under %s", d.paths, dir)
	}
	if _, err := os.Stat(filepath.Dir(d.paths[0])); err != nil {
		t.Fatalf("scratch directory: %v", err)
	}
	cleanup()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("cleanup left %d entries", len(ents))
	}
}

// RestoreToFile restores with the named mode; refuses a TXID or time for a
// mode without point-in-time restore before writing anything; without a
// name, it restores from the log the bucket holds, and says when it holds
// none.
func TestRestoreToFile(t *testing.T) {
	newest, pit := imageMode([]byte("newest"), nil), imageMode([]byte("at a point"), nil)
	newest.Log, pit.Log, pit.PointInTime = layout.Backup(), layout.LTX(), true
	newest.Name, pit.Name = "newest", "pit"
	ms := durability.Modes{pit, newest}
	out := filepath.Join(t.TempDir(), "out.db")
	m, res, n, err := ms.RestoreToFile(t.Context(), nil, "Room:a", out, durability.FileRestore{From: "newest"})
	if b, _ := os.ReadFile(out); err != nil || m.Name != "newest" || res.From != "test Room:a" || n != 6 || string(b) != "newest" {
		t.Fatalf("From newest: %s, %v, %d, %v; file %q", m.Name, res, n, err, b)
	}
	os.Remove(out)
	_, _, _, err = ms.RestoreToFile(t.Context(), nil, "Room:a", out, durability.FileRestore{From: "newest", Request: durability.RestoreRequest{TXID: 3}})
	var npe *durability.NoPointInTimeError
	if !errors.As(err, &npe) || npe.Mode != "newest" {
		t.Fatalf("TXID of newest: %v, want *NoPointInTimeError", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore wrote %s: %v", out, err)
	}
	if _, _, _, err := ms.RestoreToFile(t.Context(), nil, "Room:a", out, durability.FileRestore{From: "pit", Request: durability.RestoreRequest{TXID: 3}}); err != nil {
		t.Fatalf("TXID of pit: %v", err)
	}
	var ume *durability.UnknownModeError
	if _, _, _, err := ms.RestoreToFile(t.Context(), nil, "Room:a", out, durability.FileRestore{From: "nope"}); !errors.As(err, &ume) {
		t.Fatalf("From nope: %v, want *UnknownModeError", err)
	}
	bucket := memstore.New()
	var nle *durability.NoLogError
	if _, _, _, err := ms.RestoreToFile(t.Context(), bucket, "Room:a", out, durability.FileRestore{}); !errors.As(err, &nle) {
		t.Fatalf("empty bucket: %v, want *NoLogError", err)
	}
	if _, err := bucket.Put(t.Context(), layout.Backup().Prefix("Room:a")+"b1", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if m, _, _, err := ms.RestoreToFile(t.Context(), bucket, "Room:a", out, durability.FileRestore{}); err != nil || m.Name != "newest" {
		t.Fatalf("a bucket with a backup: %s, %v; want the newest mode", m.Name, err)
	}
}
