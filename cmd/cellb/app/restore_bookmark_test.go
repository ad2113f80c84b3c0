package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// TestRestoreBookmark: `cellb restore --bookmark <epoch>-<txid>` restores
// the state a bookmark names, in an older epoch than the newest; a bookmark
// of an epoch the bucket does not hold, or a TXID that ends no file, fails;
// a text that is no bookmark, the zero bookmark, and --bookmark with
// --txid or --time are usage errors.
func TestRestoreBookmark(t *testing.T) {
	const cellKey = "Golden:kv"
	bucket := goldenBucket(t, cellKey) // epoch 1: TXIDs 1 to 6
	// Epoch 2 starts over from the golden snapshot and ends at TXID 2.
	s, err := fsstore.Open(bucket)
	if err != nil {
		t.Fatal(err)
	}
	for txid := uint64(1); txid <= 2; txid++ {
		obj, err := s.Get(context.Background(), ltx.Key(cellKey, 1, 0, ltx.TXID(txid), ltx.TXID(txid)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(context.Background(), ltx.Key(cellKey, 2, 0, ltx.TXID(txid), ltx.TXID(txid)), obj.Data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close(s)
	dir := t.TempDir()
	out := filepath.Join(dir, "b.db")
	code, stdout, stderr := runCLI(t, "restore", "--quiet", "--bookmark", "0000000000000001-0000000000000005", "file://"+bucket, cellKey, out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "TXID 5 (epoch 1") {
		t.Errorf("stdout %q", stdout)
	}
	want := "a=upd4,b=2,c=3,k1=v1,k2=v2,k3=v3,k4=v4"
	if got := strings.Join(rowsOf(t, out), ","); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	// --txid reads the newest chain, epoch 2, which ends at TXID 2.
	if code, _, stderr := runCLI(t, "restore", "--quiet", "--txid", "5", "file://"+bucket, cellKey, filepath.Join(dir, "t.db")); code == 0 {
		t.Fatalf("--txid 5 on a newest chain ending at 2 succeeded: %s", stderr)
	}
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no such epoch", []string{"--bookmark", "0000000000000007-0000000000000001"}, 1, "epoch 7"},
		{"txid past the epoch", []string{"--bookmark", "0000000000000002-0000000000000004"}, 1, "TXID 4"},
		{"not a bookmark", []string{"--bookmark", "1-5"}, 2, "is not a bookmark"},
		{"zero bookmark", []string{"--bookmark", "0000000000000000-0000000000000000"}, 2, "empty database"},
		{"with --txid", []string{"--bookmark", "0000000000000001-0000000000000005", "--txid", "5"}, 2, "one of --txid, --time and --bookmark"},
		{"with --time", []string{"--bookmark", "0000000000000001-0000000000000005", "--time", "1"}, 2, "one of --txid, --time and --bookmark"},
	}
	for _, c := range cases {
		o := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".db")
		args := append([]string{"restore", "--quiet"}, c.args...)
		code, _, stderr := runCLI(t, append(args, "file://"+bucket, cellKey, o)...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, stderr)
		}
		if _, err := os.Stat(o); err == nil {
			t.Errorf("%s: wrote %s", c.name, o)
		}
	}
}
