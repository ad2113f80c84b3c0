package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the cellb binary cellbBinary built (95 MB a run) once
// the package's tests and benchmarks are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.path != "" {
		os.RemoveAll(filepath.Dir(buildOnce.path))
	}
	os.Exit(code)
}
