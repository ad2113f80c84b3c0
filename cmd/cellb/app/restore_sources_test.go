package app

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// `cellb restore` rebuilds a cell from each --durability mode's log: the
// restored database holds what the node's own database held.
func TestRestoreFromEveryLog(t *testing.T) {
	for _, tc := range modesToServe() {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			serveThenClose(t, serveConfig{Data: dir, Driver: tc.driver, ScriptName: "x", Idle: time.Minute, Durability: tc.mode}, func(url string) {
				for range 3 {
					call(t, "POST", url+"/counter/kept")
				}
				call(t, "POST", url+"/counter/kept/alarm?in=3600000")
			})
			local := onlyDatabase(t, filepath.Join(dir, "cells"))
			cellKey := "Counter:" + strings.TrimSuffix(filepath.Base(local), ".sqlite3")
			const q = "SELECT scope, k, v FROM _cf_KV UNION ALL SELECT scope, 'alarm', at_ms FROM _cf_ALARM ORDER BY 1, 2"
			want := queryFile(t, local, q)
			if len(want) != 2 {
				t.Fatalf("the node's database holds %v", want)
			}
			out := filepath.Join(t.TempDir(), "out.db")
			code, stdout, stderr := runCLI(t, "restore", "file://"+filepath.Join(dir, "bucket"), cellKey, out, "--quiet")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := queryFile(t, out, q); !slices.Equal(got, want) {
				t.Fatalf("restored %v, the node had %v (%s)", got, want, stdout)
			}
		})
	}
}

// Several logs for one cell: restore asks which one, and --from picks it.
func TestRestoreNeedsFromWhenLogsDiffer(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []string{"ltx", "backup"} {
		serveThenClose(t, serveConfig{Data: dir, Driver: "wasm", ScriptName: "x", Idle: time.Minute, Durability: mode}, func(url string) {
			call(t, "POST", url+"/counter/both")
		})
	}
	local := onlyDatabase(t, filepath.Join(dir, "cells"))
	cellKey := "Counter:" + strings.TrimSuffix(filepath.Base(local), ".sqlite3")
	bucket := "file://" + filepath.Join(dir, "bucket")
	out := filepath.Join(t.TempDir(), "out.db")
	code, _, stderr := runCLI(t, "restore", bucket, cellKey, out, "--quiet")
	if code != 1 || !strings.Contains(stderr, "--from") {
		t.Fatalf("several logs: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "restore", bucket, cellKey, out, "--from", "backup", "--txid", "1"); code != 2 || !strings.Contains(stderr, "point in time (ltx)") {
		t.Fatalf("--txid with a backup: exit %d, %q", code, stderr)
	}
	for _, from := range []string{"ltx", "backup"} {
		code, _, stderr := runCLI(t, "restore", bucket, cellKey, filepath.Join(t.TempDir(), from+".db"), "--from", from, "--quiet")
		if code != 0 {
			t.Fatalf("--from %s: exit %d, %q", from, code, stderr)
		}
	}
}

// onlyDatabase returns the one cell database file under dir.
func onlyDatabase(t *testing.T, dir string) string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sqlite3") {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("databases under %s: %v", dir, found)
	}
	return found[0]
}
