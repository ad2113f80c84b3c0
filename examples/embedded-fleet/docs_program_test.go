package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docBlock is the fenced block after marker in docs/embedding.md.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- "+marker+" -->\n")
	if !ok {
		t.Fatalf("docs/embedding.md has no %q marker", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the opening fence
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("the block after %q is not closed", marker)
	}
	return block
}

// TestDocumentedFirstProgram builds the first program of docs/embedding.md
// as written, outside the workspace (its go.mod's replace lines pointed at
// this checkout), runs it and counts two visits.
func TestDocumentedFirstProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program outside the workspace")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := strings.ReplaceAll(docBlock(t, doc, "first-program:go.mod"), "/src/cellb", root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(docBlock(t, doc, "first-program:main.go")), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "pages")
	// As `go mod tidy && go build` would, outside the workspace. The
	// checksum database is not consulted: the module cache already holds
	// what the workspace verified.
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the documented program: %v\n%s", err, out)
	}
	// It listens on 127.0.0.1:8080 as documented: skip if that port is
	// taken rather than fail for another program's sake.
	if ln, err := net.Listen("tcp", "127.0.0.1:8080"); err != nil {
		t.Skipf("127.0.0.1:8080 is in use: %v", err)
	} else {
		ln.Close()
	}
	run := exec.Command(bin)
	run.Dir = t.TempDir()
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, bufio.NewReader(stderr))
		exited <- run.Wait()
	}()
	t.Cleanup(func() {
		run.Process.Signal(syscall.SIGKILL)
	})
	visit := func() string {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			resp, err := http.Post("http://127.0.0.1:8080/pages/home", "", nil)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.TrimSpace(string(b))
		}
		t.Fatal("the documented program never answered")
		return ""
	}
	if a, b := visit(), visit(); a != "1" || b != "2" {
		t.Fatalf("two visits answered %q and %q, want 1 and 2", a, b)
	}
	run.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after SIGTERM: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the documented program did not stop on SIGTERM")
	}
}
