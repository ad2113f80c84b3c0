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
	"github.com/cellb/cellb/core/store"
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
