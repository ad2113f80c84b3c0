package durability

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// In WAL mode the local sync flushes the log alone (SQLite under
// synchronous=NORMAL syncs the database file itself at checkpoints); with a
// rollback journal, the database file. A missing database syncs nothing.
func TestSyncDatabaseFilesSyncsTheLogInWALMode(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "cell.sqlite3")
	synced := func() []string {
		t.Helper()
		var names []string
		if err := syncDatabaseFiles(db, func(f *os.File) error {
			names = append(names, filepath.Base(f.Name()))
			return datasync(f)
		}); err != nil {
			t.Fatal(err)
		}
		return names
	}
	if got := synced(); len(got) != 0 {
		t.Fatalf("no database: synced %v", got)
	}
	if err := os.WriteFile(db, []byte("db"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := synced(), []string{"cell.sqlite3"}; !slices.Equal(got, want) {
		t.Fatalf("rollback journal: synced %v, want %v", got, want)
	}
	if err := os.WriteFile(db+"-wal", []byte("wal"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := synced(), []string{"cell.sqlite3-wal"}; !slices.Equal(got, want) {
		t.Fatalf("WAL mode: synced %v, want %v", got, want)
	}
	if err := SyncDatabaseFiles(db); err != nil {
		t.Fatal(err)
	}
}
