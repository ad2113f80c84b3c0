package tests

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// cellbBuild is the cellb binary the memory tests run `cellb restore`
// with, built once per test binary; TestMain removes it.
var cellbBuild struct {
	sync.Once
	path string
	err  error
}

// cellbBinary builds cellb with every driver (the changeset mode's restore
// needs modernc), as `go build -tags cellb_cgo,cellb_modernc ./cmd/cellb`,
// and copies the linker's output to a new file: a process started from a
// file the linker just wrote maps some 28 MiB more of it for a while
// (docs/benchmarks.md, issue 13), which would hide what a command adds.
func cellbBinary(t testing.TB) string {
	t.Helper()
	cellbBuild.Do(func() {
		dir, err := os.MkdirTemp("", "cellb-bin-")
		if err != nil {
			cellbBuild.err = err
			return
		}
		cellbBuild.path = filepath.Join(dir, "cellb")
		linked := filepath.Join(dir, "cellb.linked")
		out, err := exec.Command("go", "build", "-tags", "cellb_cgo,cellb_modernc", "-o", linked, "github.com/cellb/cellb/cmd/cellb").CombinedOutput()
		if err != nil {
			cellbBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		cellbBuild.err = copyFile(linked, cellbBuild.path)
	})
	if cellbBuild.err != nil {
		t.Fatal(cellbBuild.err)
	}
	return cellbBuild.path
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// TestMain removes the cellb binary cellbBinary built (about 95 MB).
func TestMain(m *testing.M) {
	code := m.Run()
	if cellbBuild.path != "" {
		os.RemoveAll(filepath.Dir(cellbBuild.path))
	}
	os.Exit(code)
}
