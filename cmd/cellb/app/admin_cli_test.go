package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// runBin runs the built cellb binary and returns its exit status, stdout
// and stderr.
func runBin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(cellbBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestIDIsServesID: cellb id prints the id serve gives a name, under
// serve's default script name unless --script-name says otherwise.
func TestIDIsServesID(t *testing.T) {
	cfg, err := parseServe(nil)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runBin(t, "id", "Counter", "apples")
	if want := cell.IDFromName(cfg.ScriptName, "Counter", "apples").String(); code != 0 || out != want+"\n" {
		t.Fatalf("id = %d %q %q, want %s", code, out, errs, want)
	}
	code, out, _ = runBin(t, "id", "Counter", "apples", "--script-name", "other")
	if want := cell.IDFromName("other", "Counter", "apples").String(); code != 0 || out != want+"\n" {
		t.Fatalf("id --script-name other = %d %q, want %s", code, out, want)
	}
	if code, _, errs := runBin(t, "id", "Coun:ter", "apples"); code != 2 || !strings.Contains(errs, "no ':'") {
		t.Errorf("a class with ':': %d %q", code, errs)
	}
	if code, _, errs := runBin(t, "id", "Counter"); code != 2 || !strings.Contains(errs, "missing arguments") || !strings.Contains(errs, "run 'cellb help id' for usage") {
		t.Errorf("one argument: %d %q", code, errs)
	}
}

// TestRestoreByName: the README's apples counter, served on the embedded
// default, is restored by its name.
func TestRestoreByName(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseServe([]string{"--data", dir})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, cfg)
	for i := 1; i <= 2; i++ {
		if a := call(t, "POST", hs.URL+"/counter/apples"); a.status != 200 || a.value != int64(i) {
			t.Fatalf("POST %d: %+v", i, a)
		}
	}
	out := filepath.Join(t.TempDir(), "apples.db")
	code, stdout, errs := runBin(t, "restore", filepath.Join(dir, "bucket"), "Counter:apples", out, "--name", "--quiet")
	if code != 0 {
		t.Fatalf("restore --name: %d %q %q", code, stdout, errs)
	}
	if got := queryFile(t, out, "SELECT v FROM _cf_KV WHERE k = 'value'"); fmt.Sprint(got) != "[2]" {
		t.Errorf("restored counter %v, want [2]", got)
	}
	// Without --name the argument is an id, and "apples" is not one.
	if code, _, _ := runBin(t, "restore", filepath.Join(dir, "bucket"), "Counter:apples", out+"2", "--quiet"); code == 0 {
		t.Error("restore Counter:apples without --name succeeded")
	}
}

// seedBucket lays out a bucket with a healthy cell, the apples counter's
// lost record, a stale record, a cell a live node holds and a malformed
// record, under the bucket URL u.
func seedBucket(t *testing.T, u string) (apples string) {
	t.Helper()
	ctx := context.Background()
	s, err := openBucket(ctx, bucketMux(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	put := func(key, data string) {
		if _, err := s.Put(ctx, key, []byte(data), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lease := layout.NodeLease{Node: "n1", ExpiresMs: uint64(time.Now().Add(time.Hour).UnixMilli()), Addr: "10.0.0.1:9201"}
	put(layout.NodeKey("n1"), string(lease.Encode()))
	apples = cell.CellKey("Counter", cell.IDFromName(defaultScriptName, "Counter", "apples"))
	put(layout.LTXKey(apples, 2, 0, 1, 1), "x")
	put(layout.LTXKey(apples, 2, 0, 2, 4), "yy")
	put(layout.OwnKey("Counter:healthy"), `{"node":"","epoch":1}`)
	put(layout.LTXKey("Counter:healthy", 1, 0, 1, 1), "x")
	put(layout.OwnKey("Counter:stale"), `{"node":"n2","epoch":1}`)
	put(layout.LTXKey("Counter:stale", 3, 0, 1, 1), "x")
	put(layout.OwnKey("Counter:held"), `{"node":"n1","epoch":1}`)
	put(layout.LTXKey("Counter:held", 2, 0, 1, 1), "x")
	put(layout.OwnKey("Counter:bad"), `{"epoch":1}`)
	return apples
}

func ownJSON(t *testing.T, u, cellKey string) string {
	t.Helper()
	s, err := openBucket(context.Background(), bucketMux(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	o, err := s.Get(context.Background(), layout.OwnKey(cellKey))
	if store.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(o.Data)
}

func TestInspectAndRepairFiles(t *testing.T) {
	u := "file://" + t.TempDir()
	testInspectAndRepair(t, u)
}

func TestInspectAndRepairS3(t *testing.T) {
	useS3(t)
	testInspectAndRepair(t, fmt.Sprintf("s3://%s/ops-admin-%d", os.Getenv("CELLB_TEST_S3_BUCKET"), time.Now().UnixNano()))
}

func testInspectAndRepair(t *testing.T, u string) {
	apples := seedBucket(t, u)

	// The whole bucket, as JSON: every cell, the malformed record named,
	// exit 1 for it.
	code, out, errs := runBin(t, "inspect", u, "--json")
	if code != 1 || !strings.Contains(errs, layout.OwnKey("Counter:bad")) {
		t.Errorf("inspect --json: exit %d, stderr %q", code, errs)
	}
	var r admin.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	cells := map[string]admin.Cell{}
	for _, c := range r.Cells {
		cells[c.Key] = c
	}
	if len(cells) != 5 || len(r.Nodes) != 1 || !r.Nodes[0].Live || r.Nodes[0].Addr != "10.0.0.1:9201" {
		t.Fatalf("inspect --json: %d cells, nodes %+v", len(cells), r.Nodes)
	}
	if c := cells[apples]; c.Record != admin.RecordMissing || c.LogEpoch != 2 || c.NewestTXID != 4 || c.LogObjects != 2 || c.LogBytes != 3 ||
		len(c.Findings) != 1 || c.Findings[0].Kind != admin.FindRecordLost {
		t.Errorf("apples %+v", c)
	}
	if c := cells["Counter:held"]; !c.OwnerLive || c.Owner != "n1" {
		t.Errorf("held %+v", c)
	}
	if c := cells["Counter:bad"]; c.Record != admin.RecordMalformed || !strings.Contains(c.Error, layout.OwnKey("Counter:bad")) {
		t.Errorf("bad %+v", c)
	}

	// As text.
	code, out, _ = runBin(t, "inspect", u, "--quiet")
	if code != 1 || !strings.Contains(out, "n1") || !strings.Contains(out, "live") || !strings.Contains(out, "record-lost") {
		t.Errorf("inspect: %d\n%s", code, out)
	}
	// One cell, by name.
	code, out, errs = runBin(t, "inspect", u, "Counter:apples", "--name")
	if code != 1 || !strings.Contains(errs, "1 findings on 1 cells") || !strings.Contains(out, apples) || !strings.Contains(out, "record-lost") || !strings.Contains(out, "e2: 1..4") {
		t.Errorf("inspect one cell: %d %q\n%s", code, errs, out)
	}

	// Repair: a dry run writes nothing; --apply writes the released record.
	code, out, errs = runBin(t, "repair", u, "Counter:apples", "--name")
	if code != 0 || !strings.Contains(out, `would write {"node":"","epoch":2}`) || ownJSON(t, u, apples) != "" {
		t.Fatalf("repair dry run: %d %q\n%s", code, errs, out)
	}
	code, out, errs = runBin(t, "repair", u, "Counter:apples", "--name", "--apply")
	if code != 0 || !strings.Contains(out, "wrote") {
		t.Fatalf("repair --apply: %d %q\n%s", code, errs, out)
	}
	if got := ownJSON(t, u, apples); got != `{"node":"","epoch":2}` {
		t.Errorf("own.json after the repair: %q", got)
	}
	if code, out, _ := runBin(t, "repair", u, apples); code != 0 || !strings.Contains(out, "healthy") {
		t.Errorf("repair after the repair: %d\n%s", code, out)
	}
	code, _, errs = runBin(t, "repair", u, "Counter:stale", "--apply")
	if got := ownJSON(t, u, "Counter:stale"); code != 0 || got != `{"node":"","epoch":3}` {
		t.Errorf("stale: %d %q, own.json %s", code, errs, got)
	}
	for _, c := range []struct{ cell, want string }{
		{"Counter:held", "held by live node n1"},
		{"Counter:bad", layout.OwnKey("Counter:bad")},
		{"Counter:nothing", "holds nothing"},
	} {
		code, _, errs := runBin(t, "repair", u, c.cell, "--apply")
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("repair %s: %d %q, want exit 1 and %q", c.cell, code, errs, c.want)
		}
	}
	if got := ownJSON(t, u, "Counter:held"); got != `{"node":"n1","epoch":1}` {
		t.Errorf("held cell's own.json changed: %s", got)
	}
}

// TestInspectShowsProgress: a bucket of 100 cells or more shows progress
// on stderr, none with --quiet, and the report stays on stdout.
func TestInspectShowsProgress(t *testing.T) {
	dir := t.TempDir()
	s, err := openBucket(context.Background(), bucketMux(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		if _, err := s.Put(context.Background(), layout.OwnKey(fmt.Sprintf("Counter:c%03d", i)), []byte(`{"node":"","epoch":1}`), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close(s)
	code, out, errs := runBin(t, "inspect", dir, "--json")
	if code != 0 || !strings.Contains(errs, "inspect: 100% (120 of 120 cells)") || strings.Contains(out, "inspect:") {
		t.Errorf("inspect: %d, stderr %q", code, errs)
	}
	if code, _, errs := runBin(t, "inspect", dir, "--json", "--quiet"); code != 0 || errs != "" {
		t.Errorf("inspect --quiet: %d, stderr %q", code, errs)
	}
}

// A bucket only single-host nodes wrote keeps no ownership records: one
// cell asked alone gets the verdict the whole bucket's report gives it (no
// record-lost), repair writes nothing, and the other cells stay healthy.
// With --verify a log file of random bytes is a corrupt-file finding, and
// any finding printed exits 1.
func TestInspectSingleHostAndVerify(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := openBucket(ctx, bucketMux(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	good, err := os.ReadFile(goldenLTX(t))
	if err != nil {
		t.Fatal(err)
	}
	a := cell.CellKey("Counter", cell.IDFromName(defaultScriptName, "Counter", "a"))
	b := cell.CellKey("Counter", cell.IDFromName(defaultScriptName, "Counter", "b"))
	junk := make([]byte, 700)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	for key, data := range map[string][]byte{
		layout.LTXKey(a, 1, 0, 1, 1): good,
		layout.LTXKey(b, 1, 0, 1, 1): good,
		layout.LTXKey(b, 1, 0, 2, 2): junk,
	} {
		if _, err := s.Put(ctx, key, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"inspect", dir, a}, {"inspect", dir, "--quiet"}, {"repair", dir, a}} {
		code, out, errs := runBin(t, args...)
		if code != 0 || strings.Contains(out, "record-lost") {
			t.Errorf("cellb %v: exit %d, stderr %q\n%s", args, code, errs, out)
		}
	}
	if code, out, _ := runBin(t, "repair", dir, a, "--apply"); code != 0 || ownJSON(t, dir, a) != "" {
		t.Errorf("repair --apply on a single-host cell: exit %d, own.json %q\n%s", code, ownJSON(t, dir, a), out)
	}
	// Without --verify the junk file is not read; with it, it is found,
	// on the cell and in the whole bucket's report.
	if code, out, _ := runBin(t, "inspect", dir, b); code != 0 || strings.Contains(out, "corrupt-file") {
		t.Errorf("inspect without --verify: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"inspect", dir, b, "--verify"}, {"inspect", dir, "--verify", "--quiet"}} {
		code, out, errs := runBin(t, args...)
		named := len(args) == 3 && !strings.Contains(out, "0000000000000002-0000000000000002") // the cell view names the file
		if code != 1 || !strings.Contains(out, "corrupt-file") || named || !strings.Contains(errs, "findings") {
			t.Errorf("cellb %v: exit %d, stderr %q\n%s", args, code, errs, out)
		}
	}
	if code, out, errs := runBin(t, "inspect", dir, a, "--verify"); code != 0 || !strings.Contains(out, "none: healthy") {
		t.Errorf("inspect --verify of a sound cell: exit %d %q\n%s", code, errs, out)
	}
}

// goldenLTX is the golden vectors' snapshot, TXID 1.
func goldenLTX(t *testing.T) string {
	return filepath.Join(goldenDir(t), "replica", "ltx", "0", "0000000000000001-0000000000000001.ltx")
}
