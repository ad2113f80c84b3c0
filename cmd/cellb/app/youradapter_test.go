package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// myBucketAdapter is the out-of-tree adapter of TestYourAdapterCellb: a
// mybucket:///dir scheme over the files adapter, in a module of its own.
const myBucketAdapter = `// Package mybucket opens mybucket:///dir: a files bucket at dir.
package mybucket

import (
	"context"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/store"
)

// Register adds the mybucket scheme to m.
func Register(m *store.URLMux) {
	m.Register(store.URLScheme{Name: "mybucket", Dir: true, Form: "mybucket:///path/to/dir",
		Opener: store.URLOpenerFunc(func(_ context.Context, u *store.BucketURL) (store.Store, error) {
			return fsstore.Open(u.Dir)
		})})
}
`

// adaptersDocBlock is the fenced block after marker in docs/adapters.md.
func adaptersDocBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- "+marker+" -->\n")
	if !ok {
		t.Fatalf("docs/adapters.md has no %q marker", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the opening fence
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("the block after %q is not closed", marker)
	}
	return block
}

// TestYourAdapterCellb builds the cellb of docs/adapters.md ("cellb with
// your adapter") as written, outside the workspace (its go.mod's replace
// lines pointed at this checkout), with an adapter registering a new
// scheme, and runs diagnose, inspect, serve, restore and repair on buckets
// of that scheme; the stock cellb refuses the scheme.
func TestYourAdapterCellb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program outside the workspace")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "adapters.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":              strings.ReplaceAll(adaptersDocBlock(t, doc, "your-cellb:go.mod"), "/src/cellb", root),
		"mybucket.go":         myBucketAdapter,
		"cmd/mycellb/main.go": adaptersDocBlock(t, doc, "your-cellb:cmd/mycellb/main.go"),
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "mycellb")
	// As `go mod tidy && go build` would, outside the workspace; the
	// module cache already holds what the workspace verified.
	build := exec.Command("go", "build", "-o", bin, "./cmd/mycellb")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the documented cellb: %v\n%s", err, out)
	}
	mycellb := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}

	// diagnose runs the store suite through the new scheme.
	empty := t.TempDir()
	code, out, errs := mycellb("diagnose", "--quiet", "--large-mib", "1", "mybucket://"+empty)
	if code != diagnoseOK || !strings.Contains(out, "mybucket://") {
		t.Fatalf("diagnose mybucket://: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// inspect reads a bucket with a released cell through it.
	dir := t.TempDir()
	s, err := openBucket(context.Background(), bucketMux(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range map[string]string{
		layout.OwnKey("Counter:healthy"):             `{"node":"","epoch":1}`,
		layout.LTXKey("Counter:healthy", 1, 0, 1, 1): "x",
	} {
		if _, err := s.Put(context.Background(), key, []byte(data), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close(s)
	code, out, errs = mycellb("inspect", "--quiet", "mybucket://"+dir)
	if code != 0 || !strings.Contains(out, "Counter:healthy") {
		t.Fatalf("inspect mybucket://: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = mycellb("inspect", "--quiet", "mybucket://"+dir, "Counter:healthy")
	if code != 0 || !strings.Contains(out, "Counter:healthy") {
		t.Fatalf("inspect mybucket:// Counter:healthy: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// serve runs a fleet node on the new scheme; once it has stopped,
	// inspect finds the cell healthy and restore rebuilds it by name.
	served := t.TempDir()
	node := startNode(t, bin, "mybucket://"+served, "n1")
	for i := 1; i <= 2; i++ {
		if a := call(t, "POST", node.url+"/counter/apples"); a.status != 200 || a.value != int64(i) {
			t.Fatalf("POST %d on mybucket://: %+v", i, a)
		}
	}
	if a := call(t, "POST", node.url+"/counter/pears"); a.status != 200 || a.value != 1 {
		t.Fatalf("POST pears on mybucket://: %+v", a)
	}
	node.signal(syscall.SIGTERM)
	if err := node.cmd.Wait(); err != nil {
		t.Fatalf("serve --bucket mybucket:// after SIGTERM: %v", err)
	}
	if code, out, errs := mycellb("inspect", "--quiet", "mybucket://"+served, "Counter:apples", "--name"); code != 0 || !strings.Contains(out, "healthy") {
		t.Fatalf("inspect the served cell: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	restored := filepath.Join(t.TempDir(), "apples.db")
	if code, out, errs := mycellb("restore", "--quiet", "--name", "mybucket://"+served, "Counter:apples", restored); code != 0 {
		t.Fatalf("restore from mybucket://: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if got := queryFile(t, restored, "SELECT v FROM _cf_KV WHERE k = 'value'"); fmt.Sprint(got) != "[2]" {
		t.Errorf("restored counter %v, want [2]", got)
	}

	// repair on the new scheme: with one served cell's ownership record
	// lost (the other's keeps the bucket a fleet's), inspect finds it and repair --apply writes the released record
	// at its epoch, after which the cell is healthy again.
	apples := cell.CellKey("Counter", cell.IDFromName(defaultScriptName, "Counter", "apples"))
	own := ownJSON(t, served, apples)
	sv, err := openBucket(context.Background(), bucketMux(), served)
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.Delete(context.Background(), layout.OwnKey(apples)); err != nil {
		t.Fatal(err)
	}
	store.Close(sv)
	if code, out, errs := mycellb("inspect", "--quiet", "mybucket://"+served, "Counter:apples", "--name"); code != 1 || !strings.Contains(out, "record-lost") {
		t.Fatalf("inspect after losing the record: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, out, errs := mycellb("repair", "mybucket://"+served, "Counter:apples", "--name", "--apply"); code != 0 || !strings.Contains(out, "wrote") {
		t.Fatalf("repair --apply on mybucket://: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if got := ownJSON(t, served, apples); got != own {
		t.Errorf("own.json after the repair %q, want the released record it had, %q", got, own)
	}
	if code, out, errs := mycellb("inspect", "--quiet", "mybucket://"+served, "Counter:apples", "--name"); code != 0 || !strings.Contains(out, "healthy") {
		t.Fatalf("inspect after the repair: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// Without the adapter (cellb's own main) the scheme is unknown.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), &env{stdout: &stdout, stderr: &stderr}, []string{"inspect", "--quiet", "mybucket://" + dir}); code != 1 || !strings.Contains(stderr.String(), "mybucket") {
		t.Fatalf("stock cellb inspect mybucket://: exit %d, stderr %q", code, stderr.String())
	}
}
