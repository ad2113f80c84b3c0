//go:build cgo

package cgo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The driver reads two unexported fields of mattn/go-sqlite3; an upgrade
// that moves them must fail here, not silently in production.
func TestMattnLayout(t *testing.T) {
	if layoutErr != nil {
		t.Error(layoutErr)
	}
	if dbLayoutErr != nil {
		t.Error(dbLayoutErr)
	}
}

func TestUnsafeUnderCapture(t *testing.T) {
	for _, tc := range []struct {
		name, arg string
		unsafe    bool
	}{
		{"journal_mode", "", false},
		{"journal_mode", "wal", false},
		{"JOURNAL_MODE", " WAL ", false},
		{"journal_mode", "delete", true},
		{"journal_mode", "memory", true},
		{"wal_autocheckpoint", "0", false},
		{"wal_autocheckpoint", "", false},
		{"wal_autocheckpoint", "1000", true},
		{"wal_autocheckpoint", "-5", false},
		{"wal_autocheckpoint", "x", true},
		{"page_size", "1024", false},
	} {
		if got := unsafeUnderCapture(tc.name, tc.arg); got != tc.unsafe {
			t.Errorf("%s=%q: %v", tc.name, tc.arg, got)
		}
	}
}

// replaceDatabase must remove the old database's WAL, shared memory and
// journal before the new file takes its name: SQLite would otherwise apply
// them to it.
func TestReplaceDatabaseRemovesStaleFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.WriteFile(path+suffix, []byte("old"+suffix), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp, err := writeTemp(dir, "db.restore-*", []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	if err := replaceDatabase(path, tmp); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Errorf("database holds %q, %v", b, err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", suffix, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "db.restore-*")); len(m) != 0 {
		t.Errorf("temporary file left: %v", m)
	}
}
