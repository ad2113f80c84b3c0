package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/store"
)

// OpenURL: a missing directory is *MissingDirError naming it (for a plain
// path and a file URL alike) and still matches ErrNoRoot; an existing one
// opens.
func TestOpenURLMissingDir(t *testing.T) {
	m := store.NewURLMux(Register)
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	for _, raw := range []string{missing, "file://" + missing} {
		_, err := OpenURL(t.Context(), m, raw)
		var me *MissingDirError
		if !errors.As(err, &me) || me.Dir != missing || !errors.Is(err, ErrNoRoot) || !errors.Is(err, iofs.ErrNotExist) ||
			err.Error() != "bucket directory "+missing+" does not exist; create it first (mkdir -p "+missing+") if the path is right" {
			t.Errorf("%s: %v", raw, err)
		}
	}
	s, err := OpenURL(t.Context(), m, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	s.(*Store).Close()
}

// FreshDir names a files bucket without its MetaDir, and nothing else.
func TestFreshDir(t *testing.T) {
	m := store.NewURLMux(Register)
	dir := t.TempDir()
	if got := FreshDir(m, "file://"+dir); got != dir {
		t.Fatalf("FreshDir of a new directory = %q, want %q", got, dir)
	}
	if err := os.Mkdir(filepath.Join(dir, MetaDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FreshDir(m, dir); got != "" {
		t.Fatalf("FreshDir of a used directory = %q, want none", got)
	}
	if got := FreshDir(m, "s3://b"); got != "" {
		t.Fatalf("FreshDir of another scheme = %q", got)
	}
}
