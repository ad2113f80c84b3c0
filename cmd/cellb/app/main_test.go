package app

import (
	"os"
	"path/filepath"
	"testing"
)

// mainDir is the cellb main package, the one the tests build and run:
// these commands are package app, one directory below it.
const mainDir = ".."

// TestMain removes the cellb binary cellbBinary built (95 MB a run) once
// the package's tests and benchmarks are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.path != "" {
		os.RemoveAll(filepath.Dir(buildOnce.path))
	}
	os.Exit(code)
}
