package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

// goldenDir finds ../shared/testdata/celld-ltx-golden next to the checkout.
func goldenDir(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	dir := filepath.Join(wd, "..", "..", "..", "..", "shared", "testdata", "celld-ltx-golden")
	if d := os.Getenv("CELLB_TESTDATA"); d != "" {
		dir = filepath.Join(d, "celld-ltx-golden")
	}
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("golden vectors missing at %s", dir)
		}
		t.Skipf("golden vectors missing at %s", dir)
	}
	return dir
}

// goldenBucket lays the six golden LTX files out as a cell's epoch-1 log in a
// local-files bucket.
func goldenBucket(t *testing.T, cellKey string) string {
	t.Helper()
	src := filepath.Join(goldenDir(t), "replica", "ltx", "0")
	dir := t.TempDir()
	s, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		min, max, ok := ltx.ParseFilename(e.Name())
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(context.Background(), ltx.Key(cellKey, 1, 0, min, max), data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &env{stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// rowsOf opens a database file with real SQLite and returns its kv rows
// ("k=v" in key order), after checking its integrity.
func rowsOf(t *testing.T, path string) []string {
	t.Helper()
	return queryFile(t, path, "SELECT k, v FROM kv ORDER BY k")
}

// queryFile opens a database file with real SQLite, checks its integrity
// and returns sql's rows, each as its values joined by "=".
func queryFile(t *testing.T, path, sql string) []string {
	t.Helper()
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := wasm.New().Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "check.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Restore(ctx, img); err != nil {
		t.Fatalf("restore into SQLite: %v", err)
	}
	query := func(sql string) []string {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var parts []string
			for _, v := range rows.Values() {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				parts = append(parts, fmt.Sprint(v))
			}
			out = append(out, strings.Join(parts, "="))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if ic := query("PRAGMA integrity_check"); len(ic) != 1 || ic[0] != "ok" {
		t.Fatalf("integrity_check: %v", ic)
	}
	return query(sql)
}

func TestRestoreGoldenChain(t *testing.T) {
	const cellKey = "Golden:kv"
	bucket := goldenBucket(t, cellKey)
	out := filepath.Join(t.TempDir(), "out.db")
	// Flags after the arguments, as people type them.
	code, stdout, stderr := runCLI(t, "restore", "file://"+bucket, cellKey, out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "TXID 6") {
		t.Errorf("stdout %q", stdout)
	}
	want := []string{"a=upd5", "b=2", "c=3", "k1=v1", "k2=v2", "k3=v3", "k4=v4", "k5=v5"}
	if got := rowsOf(t, out); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// Every prefix: TXID n is the state after step n-1.
	for n := 1; n <= 6; n++ {
		out := filepath.Join(t.TempDir(), "p.db")
		code, _, stderr := runCLI(t, "restore", "--txid", fmt.Sprint(n), "file://"+bucket, cellKey, out, "--quiet")
		if code != 0 {
			t.Fatalf("--txid %d: exit %d: %s", n, code, stderr)
		}
		want := []string{"a=1", "b=2", "c=3"}
		if n > 1 {
			want[0] = "a=upd" + string(rune('0'+n-1))
		}
		for i := 1; i < n; i++ {
			want = append(want, "k"+string(rune('0'+i))+"=v"+string(rune('0'+i)))
		}
		if got := rowsOf(t, out); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("--txid %d: rows %v, want %v", n, got, want)
		}
	}
}

func TestRestoreErrors(t *testing.T) {
	const cellKey = "Golden:kv"
	bucket := goldenBucket(t, cellKey)
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"bad url", []string{"restore", "nope://x", cellKey, filepath.Join(dir, "a.db")}, 1, "bucket"},
		{"bad cell key", []string{"restore", "file://" + bucket, "no/slash", filepath.Join(dir, "b.db")}, 2, ""},
		{"unknown cell", []string{"restore", "file://" + bucket, "Golden:other", filepath.Join(dir, "c.db")}, 1, "holds no ltx, changeset or backup files"},
		{"txid inside nothing", []string{"restore", "file://" + bucket, cellKey, filepath.Join(dir, "d.db"), "--txid", "9"}, 1, "TXID 9"},
		{"missing args", []string{"restore", "file://" + bucket}, 2, "usage"},
		{"both targets", []string{"restore", "file://" + bucket, cellKey, filepath.Join(dir, "e.db"), "--txid", "2", "--time", "1"}, 2, "not both"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, stderr)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); c.code == 1 && n > 0 {
			t.Errorf("%s: error is not one line: %q", c.name, stderr)
		}
	}
	// A corrupt file is refused with a clear error, and out.db is not written.
	s, _ := fsstore.Open(bucket)
	key := ltx.Key(cellKey, 1, 0, 3, 3)
	obj, _ := s.Get(context.Background(), key)
	bad := append([]byte(nil), obj.Data...)
	bad[len(bad)-20] ^= 0xff
	s.Put(context.Background(), key, bad, store.PutOptions{})
	out := filepath.Join(dir, "corrupt.db")
	code, _, stderr := runCLI(t, "restore", "file://"+bucket, cellKey, out)
	if code != 1 || !strings.Contains(stderr, "corrupt LTX file") {
		t.Fatalf("corrupt file: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a failed restore wrote out.db")
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestRestoreRefusesAStitchedChain: epoch 2 of the cell lost its snapshot
// (TXID 1). Its deltas laid over epoch 1's snapshot would give a database
// that passes integrity_check and that nobody wrote; every form of
// `cellb restore` refuses with a message naming the missing key, and
// out.db is not written.
func TestRestoreRefusesAStitchedChain(t *testing.T) {
	const cellKey = "Golden:kv"
	bucket := goldenBucket(t, cellKey)
	s, err := fsstore.Open(bucket)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for txid := ltx.TXID(2); txid <= 6; txid++ {
		obj, err := s.Get(ctx, ltx.Key(cellKey, 1, 0, txid, txid))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, ltx.Key(cellKey, 2, 0, txid, txid), obj.Data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close(s)
	missing := ltx.Key(cellKey, 2, 0, 1, 1)
	dir := t.TempDir()
	for i, extra := range [][]string{nil, {"--txid", "4"}, {"--time", "2100-01-01T00:00:00Z"}, {"--from", "ltx"}} {
		out := filepath.Join(dir, fmt.Sprintf("out%d.db", i))
		code, _, stderr := runCLI(t, append([]string{"restore", "file://" + bucket, cellKey, out, "--quiet"}, extra...)...)
		if code != 1 || !strings.Contains(stderr, "has lost its snapshot: "+missing+" is missing") ||
			!strings.Contains(stderr, "move cells/Golden:kv/ltx/e2/ aside") {
			t.Errorf("%v: exit %d, stderr %q", extra, code, stderr)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
			t.Errorf("%v: error is not one line: %q", extra, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: a refused restore wrote out.db", extra)
		}
	}
}
