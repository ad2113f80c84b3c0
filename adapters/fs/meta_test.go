//go:build unix

package fs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/core/store"
)

// RemoveUnusedMeta removes the store's directory only when no object
// needs it.
func TestRemoveUnusedMeta(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "a/b", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveUnusedMeta(dir); removed || err != nil {
		t.Fatalf("with a key: removed %v, %v", removed, err)
	}
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if removed, err := RemoveUnusedMeta(dir); !removed || err != nil {
		t.Fatalf("without keys: removed %v, %v", removed, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
	if removed, err := RemoveUnusedMeta(dir); removed || err != nil {
		t.Fatalf("again: removed %v, %v", removed, err)
	}
	// A sidecar record or a temporary file keeps it.
	if err := os.MkdirAll(filepath.Join(dir, tmpDir), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, tmpDir, "x.tmp"), nil, 0o644)
	if removed, err := RemoveUnusedMeta(dir); removed || err != nil {
		t.Fatalf("with a temporary file: removed %v, %v", removed, err)
	}
}
