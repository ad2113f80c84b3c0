package cell

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestartMark: the mark is recorded once, names the boot, is stale
// for another boot or content it cannot read, current for its own, and a
// clean close removes it.
func TestRestartMark(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.sqlite3")
	m := &restartMark{path: db, boot: "b1"}
	if stale, err := m.load(); err != nil || stale || m.present {
		t.Fatalf("no mark: stale %v present %v err %v", stale, m.present, err)
	}
	if err := m.record(); err != nil {
		t.Fatal(err)
	}
	if present, boot, _ := readUnsyncedMark(db); !present || boot != "b1" {
		t.Fatalf("recorded mark: present %v boot %q", present, boot)
	}
	os.Remove(unsyncedMarkPath(db))
	if err := m.record(); err != nil { // once per activation
		t.Fatal(err)
	}
	if present, _, _ := readUnsyncedMark(db); present {
		t.Fatal("a second record wrote the mark again")
	}
	for _, c := range []struct {
		content string
		boot    string
		stale   bool
	}{{"b1\n", "b1", false}, {"b1\n", "b2", true}, {"", "b2", true}, {"b1", "", true}} {
		if err := os.WriteFile(unsyncedMarkPath(db), []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		m := &restartMark{path: db, boot: c.boot}
		if stale, err := m.load(); err != nil || stale != c.stale {
			t.Fatalf("mark %q, boot %q: stale %v (err %v), want %v", c.content, c.boot, stale, err, c.stale)
		}
		if err := m.clear(); err != nil {
			t.Fatal(err)
		}
		if present, _, _ := readUnsyncedMark(db); present {
			t.Fatalf("mark %q: a clean close left it", c.content)
		}
	}
}
