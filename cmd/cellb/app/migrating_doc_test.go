package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/admin"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/page"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/drivers/wasm"
)

// migratingBlock is the fenced block after <!-- migrate:marker --> in
// docs/migrating.md, as lines.
func migratingBlock(t *testing.T, marker string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "migrating.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "<!-- migrate:"+marker+" -->\n")
	if !ok {
		t.Fatalf("docs/migrating.md has no %q marker", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the opening fence
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("the block after %q is not closed", marker)
	}
	return strings.Split(strings.TrimSpace(block), "\n")
}

// shellWords splits a command line as sh would for the quoting the doc
// uses ('…' and "…", no escapes), and returns the trailing "# …" comment,
// which is the output a line promises.
func shellWords(line string) (words []string, want string) {
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '#' && !inWord:
			return words, strings.TrimSpace(line[i+1:])
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, ""
}

// docRun runs a block's lines in dir, with the doc's bucket URLs replaced
// by subst: `cellb serve` in the background (on a free port and a data
// directory of its own), other cellb commands to completion (exit 0, and
// the promised output in stdout), `curl` against that serve, `sqlite3`
// through real SQLite (the promised rows).
type docRun struct {
	t     *testing.T
	bin   string
	dir   string
	subst []string // old, new, ...
	serve *proc
	// epoch is the X-Cellb-Epoch of the last curl.
	epoch string
}

func (r *docRun) block(marker string) {
	r.t.Helper()
	for _, line := range migratingBlock(r.t, marker) {
		r.line(line)
	}
}

func (r *docRun) line(line string) {
	t := r.t
	t.Helper()
	words, want := shellWords(line)
	for i, w := range words {
		for j := 0; j < len(r.subst); j += 2 {
			w = strings.ReplaceAll(w, r.subst[j], r.subst[j+1])
		}
		words[i] = w
	}
	switch {
	case len(words) > 1 && words[0] == "cellb" && words[1] == "serve":
		args := append(words[2:], "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
		r.serve = startWatched(t, r.bin, "serve", args...)
	case words[0] == "cellb":
		cmd := exec.Command(r.bin, words[1:]...)
		cmd.Dir = r.dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", line, err, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("%s: stdout %q, want %q in it", line, out.String(), want)
		}
	case words[0] == "curl":
		method, url := "GET", ""
		for i := 1; i < len(words); i++ {
			if words[i] == "-X" {
				method, i = words[i+1], i+1
			} else {
				url = words[i]
			}
		}
		if r.serve == nil {
			t.Fatalf("%s: no cellb serve started before", line)
		}
		url = strings.Replace(url, "localhost:8787", strings.TrimPrefix(r.serve.url, "http://"), 1)
		req, _ := http.NewRequest(method, "http://"+url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.epoch = resp.Header.Get("X-Cellb-Epoch")
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != want {
			t.Fatalf("%s: %d %s, want 200 %s", line, resp.StatusCode, body, want)
		}
	case words[0] == "sqlite3" && len(words) == 3:
		got := strings.Join(queryFile(t, filepath.Join(r.dir, words[1]), words[2]), "\n")
		if got != want {
			t.Fatalf("%s: %q, want %q", line, got, want)
		}
	default:
		t.Fatalf("docs/migrating.md: the test does not know how to run %q", line)
	}
}

// stopServe stops the block's serve with SIGTERM and waits for its exit.
func (r *docRun) stopServe() {
	r.t.Helper()
	r.serve.signal(syscall.SIGTERM)
	for deadline := time.Now().Add(60 * time.Second); !r.serve.exitedByItself() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !r.serve.exitedByItself() || r.serve.exitErr != nil {
		r.t.Fatalf("serve after SIGTERM: exited %v, %v", r.serve.exitedByItself(), r.serve.exitErr)
	}
	r.serve = nil
}

// litestreamDir is a directory with ./replica (the Litestream file replica
// of the shared vectors) and app.db (a database holding what the replica's
// newest state holds, written by SQLite, rollback journal).
func litestreamDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(goldenDir(t), "replica", "ltx", "0")
	dst := filepath.Join(dir, "replica", "ltx", "0")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	conn, err := wasm.New().Open(ctx, driver.Config{Path: filepath.Join(dir, "app.db")})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE kv(k TEXT PRIMARY KEY, v TEXT NOT NULL)",
		"INSERT INTO kv VALUES ('a','upd5'),('b','2'),('c','3'),('k1','v1'),('k2','v2'),('k3','v3'),('k4','v4'),('k5','v5')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMigratingFromLitestream runs docs/migrating.md's Litestream steps as
// written: each import (replica directory, database file, fleet from a
// replica URL), the check, and the application's first activation (a
// core/host node on the data directory with a Notes class reading kv).
// A second import into the same cell is refused.
func TestMigratingFromLitestream(t *testing.T) {
	bin := cellbBinary(t)
	for _, marker := range []string{"litestream-import-replica", "litestream-import-file"} {
		t.Run(marker, func(t *testing.T) {
			dir := litestreamDir(t)
			r := &docRun{t: t, bin: bin, dir: dir}
			r.block(marker)
			r.block("litestream-check")
			// The import again: the cell has been written.
			cmd := exec.Command(bin, "import", "--data-dir", ".cellb", "--name", "Notes:main", "app.db")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "has been written before") {
				t.Fatalf("a second import: %v %s", err, out)
			}
			if got := notesOnHost(t, filepath.Join(dir, ".cellb")); got != "upd5" {
				t.Fatalf("the application reads a = %q, want upd5", got)
			}
		})
	}
	t.Run("litestream-import-fleet", func(t *testing.T) {
		dir := litestreamDir(t)
		bucket := filepath.Join(dir, "fleet-bucket")
		os.Mkdir(bucket, 0o755)
		r := &docRun{t: t, bin: bin, dir: dir, subst: []string{
			"s3://my-litestream-bucket/app", "file://" + filepath.Join(dir, "replica"),
			"s3://my-bucket", "file://" + bucket,
		}}
		r.block("litestream-import-fleet")
		id, _ := admin.IDFromName(defaultScriptName, "Notes", "main")
		out := filepath.Join(dir, "out.db")
		if code, _, stderr := runCLI(t, "restore", "--quiet", "file://"+bucket, "Notes:"+id, out); code != 0 {
			t.Fatal(stderr)
		}
		if got := strings.Join(rowsOf(t, out), " "); got != "a=upd5 b=2 c=3 k1=v1 k2=v2 k3=v3 k4=v4 k5=v5" {
			t.Fatalf("the fleet's cell holds %s", got)
		}
		s, err := fsstore.Open(bucket)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close(s)
		obj, err := s.Get(context.Background(), layout.OwnKey("Notes:"+id))
		if err != nil || string(obj.Data) != `{"node":"","epoch":1}` {
			t.Fatalf("own.json after the import: %v %v", obj, err)
		}
	})
}

// Notes is the class of the Litestream example: the application's
// queries, now a cell's.
type Notes struct{ st *cell.State }

// notesOnHost opens a single-host node on dataDir, as the application
// would after the migration, and reads kv's "a" through the Notes cell
// "main".
func notesOnHost(t *testing.T, dataDir string) string {
	t.Helper()
	ctx := context.Background()
	bucket, err := fsstore.Open(filepath.Join(dataDir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(bucket)
	var notes *cell.Namespace[*Notes]
	h, err := host.New(ctx, host.Config{
		Driver:     wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=NORMAL")),
		DataDir:    dataDir,
		Bucket:     bucket,
		Mode:       ltxlog.Mode(),
		Ownership:  host.SingleHost,
		ScriptName: defaultScriptName,
		Logger:     quietLogger(),
		Classes: func(s *host.Setup) (err error) {
			notes, err = cell.Register(s.Runtime, "Notes", func(ctx context.Context, st *cell.State) (*Notes, error) {
				return &Notes{st: st}, nil
			})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	v, err := cell.Call(ctx, notes.Get(notes.IDFromName("main")), func(ctx context.Context, n *Notes) (string, error) {
		var v string
		err := n.st.SQL().QueryRow(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v)
		return v, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// celldBucket lays out a bucket as a celld fleet leaves it once its nodes
// stopped: the Counter cell "apples" of deployment my-worker at epoch 1
// (own.json naming its node), its log the Litestream-written chain of the
// shared vectors (TXIDs 1-6, legacy LZ4 frames) and one more level-0 file
// (TXID 7) that adds celld's _cf_KV with the counter's value, 41, in V8's
// serialization (as storage.put writes it); the node's lease expired with
// its node log sealed; the wake index at format 2.
func celldBucket(t *testing.T) (dir, cellKey string) {
	t.Helper()
	ctx := context.Background()
	id, err := admin.IDFromName("my-worker", "Counter", "apples")
	if err != nil {
		t.Fatal(err)
	}
	cellKey = "Counter:" + id
	dir = goldenBucket(t, cellKey)
	s, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	res, err := ltxlog.Restore(ctx, s, cellKey, ltxlog.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := wasm.New().Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "celld.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Restore(ctx, res.Image); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE _cf_KV(scope TEXT, k TEXT, v TEXT, PRIMARY KEY(scope, k))",
		fmt.Sprintf("INSERT INTO _cf_KV VALUES ('%s', 'value', x'FF0F4952')", cellKey), // V8: version 15, int32 41
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	img, err := conn.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	var pages []page.Page
	for pg := 0; pg*ps < len(img); pg++ {
		at := img[pg*ps : (pg+1)*ps]
		if (pg+1)*ps > len(res.Image) || !bytes.Equal(at, res.Image[pg*ps:(pg+1)*ps]) {
			pages = append(pages, page.Page{Pgno: uint32(pg + 1), Data: at})
		}
	}
	l0, err := ltx.Encode(ltx.Header{PageSize: ps, Commit: uint32(len(img) / ps), MinTXID: 7, MaxTXID: 7, Timestamp: time.Now().UnixMilli()}, pages)
	if err != nil {
		t.Fatal(err)
	}
	node := "node_3f1c00000000000000000000000000aa"
	probeKey := strings.Repeat("9a1e", 16) // celld: the process's Ed25519 key, also its generation
	lease := layout.NodeLease{Node: node, ExpiresMs: uint64(time.Now().Add(-time.Minute).UnixMilli()), Addr: "10.0.0.7:8080",
		ProbePublicKey: probeKey, OwnershipIndexGeneration: probeKey, PeerProtocol: 2, PacedHandoff: true, Log: &layout.NodeLog{State: layout.NodeLogSealed, Epoch: 3, Ensemble: []string{}},
		Load: &layout.NodeLoad{PlacementWeight: 100, BucketFormat: 2}}
	for key, data := range map[string][]byte{
		ltx.Key(cellKey, 1, 0, 7, 7): l0,
		layout.OwnKey(cellKey):       layout.OwnRecord{Node: node, Epoch: 1}.Encode(),
		layout.NodeKey(node):         lease.Encode(),
		"wake/format.json":           []byte(`{"format":2}`),
	} {
		if _, err := s.Put(ctx, key, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return dir, cellKey
}

// TestMigratingFromCelld runs docs/migrating.md's celld steps as written
// on a bucket celld left: inspect (exit 0), serve with the deployment's
// name (the counter goes on from celld's 41, at epoch 2), SIGTERM, and the
// rollback's inspect and restore (celld's rows and CellB's counter, in a
// database celld's restore would rebuild).
func TestMigratingFromCelld(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cellb serve")
	}
	bin := cellbBinary(t)
	bucket, cellKey := celldBucket(t)
	r := &docRun{t: t, bin: bin, dir: t.TempDir(), subst: []string{"s3://my-bucket", "file://" + bucket}}
	r.block("celld-inspect")
	r.block("celld-serve")
	if r.epoch != "2" {
		t.Fatalf("the counter answered at epoch %q, want 2 (celld left it at 1)", r.epoch)
	}
	r.stopServe()
	// Released at the epoch CellB took, CellB's lease gone, celld's left.
	s, err := fsstore.Open(bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	ctx := context.Background()
	if obj, err := s.Get(ctx, layout.OwnKey(cellKey)); err != nil || string(obj.Data) != `{"node":"","epoch":2}` {
		t.Fatalf("own.json after SIGTERM: %v %v", obj, err)
	}
	if leases, err := store.ListAll(ctx, s, store.ListOptions{Prefix: layout.NodesPrefix}); err != nil || len(leases.Objects) != 1 {
		t.Fatalf("node leases after SIGTERM: %v %v", leases.Objects, err)
	}
	r.block("celld-rollback")
	if got := queryFile(t, filepath.Join(r.dir, "check.db"), "SELECT count(*) FROM _cf_KV"); len(got) != 1 || got[0] != "1" {
		t.Fatalf("_cf_KV rows after the rollback: %v", got)
	}
}
