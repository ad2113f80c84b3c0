package fs

import (
	"errors"
	iofs "io/fs"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/store"
)

func TestURLOpener(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	m := store.NewURLMux(Register)
	if got := m.Schemes(); len(got) != 1 || got[0] != "file" {
		t.Fatalf("Register added %v", got)
	}
	for _, raw := range []string{dir, "file://" + dir, "file://localhost" + dir + "/"} {
		s, err := m.Open(ctx, raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		fs, ok := s.(*Store)
		if !ok || fs.Root() != dir {
			t.Fatalf("%s opened %T %v", raw, s, s)
		}
		if err := fs.Close(); err != nil {
			t.Fatal(err)
		}
	}

	missing := filepath.Join(dir, "missing")
	_, err := m.Open(ctx, "file://"+missing)
	if !errors.Is(err, ErrNoRoot) || !errors.Is(err, iofs.ErrNotExist) || err.Error() != "fs: open "+missing+": the bucket directory does not exist" {
		t.Fatalf("a missing directory: %v", err)
	}
	var ue *store.URLError
	if _, err := m.Open(ctx, "file://"+dir+"?create=true"); !errors.As(err, &ue) {
		t.Fatalf("a query parameter: %v", err)
	}

	// Options reach Open.
	m = store.NewURLMux(URLOpener{Options: []Option{WithCreateRoot()}}.Register)
	s, err := m.Open(ctx, missing)
	if err != nil {
		t.Fatalf("WithCreateRoot: %v", err)
	}
	store.Close(s)
}
