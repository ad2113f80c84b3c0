package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// entries lists dir's names, temporary files included.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	if err := WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "two" {
		t.Fatalf("content %q, want %q", got, "two")
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want only db", names)
	}
}

// A failure while writing leaves the old file as it was and no temporary
// file behind.
func TestFailedWriteLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := Write(path, 0o600, func(f *os.File) error {
		f.Write([]byte("half of the n"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if got := read(t, path); got != "old" {
		t.Fatalf("content %q after a failed write, want the old %q", got, "old")
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v after a failed write, want only db", names)
	}
}

// A rename that fails (the target is a non-empty directory) leaves the
// target and no temporary file.
func TestFailedRenameLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600); err == nil {
		t.Fatal("replacing a non-empty directory succeeded")
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v after a failed rename, want only db", names)
	}
}

// The new file keeps the permission bits of the file it replaces; a new
// one gets perm.
func TestWriteKeepsPermissions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	if err := WriteFile(path, []byte("one"), 0o604); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o604 {
		t.Fatalf("new file mode %v, want 0604", fi.Mode().Perm())
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("replaced file mode %v, want the old 0640", fi.Mode().Perm())
	}
}

// Temp leaves a synced file for the caller to check; Commit puts it in
// place.
func TestTempThenCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	tmp, err := Temp(dir, ".db-*", func(f *os.File) error {
		_, err := f.Write([]byte("image"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != dir || read(t, tmp) != "image" {
		t.Fatalf("temporary file %s is not a full copy in %s", tmp, dir)
	}
	if err := Commit(tmp, path); err != nil {
		t.Fatal(err)
	}
	if read(t, path) != "image" || len(entries(t, dir)) != 1 {
		t.Fatalf("after Commit the directory holds %v", entries(t, dir))
	}
	boom := errors.New("bad image")
	if _, err := Temp(dir, ".db-*", func(*os.File) error { return boom }); !errors.Is(err, boom) || len(entries(t, dir)) != 1 {
		t.Fatalf("failed Temp: err %v, directory %v", err, entries(t, dir))
	}
}

func TestRemoveIfExistAndSyncDir(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "db-wal")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveIfExist(a, filepath.Join(dir, "db-journal")); err != nil {
		t.Fatal(err)
	}
	if len(entries(t, dir)) != 0 {
		t.Fatalf("left %v", entries(t, dir))
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
}
