package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineBudget bounds the lines of cellb's non-test Go code: the command is
// flags, output and wiring (docs/cli.md); logic goes into library
// packages (core/cli, core/host, core/durability, examples/demo, ...).
const lineBudget = 900

// TestLineBudget fails when the non-test Go files of cmd/cellb hold more
// than lineBudget lines (as wc -l counts them): move logic into a library
// package rather than raising the bound.
func TestLineBudget(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total > lineBudget {
		t.Fatalf("cmd/cellb has %d lines of non-test Go code, more than %d: move logic into a library package", total, lineBudget)
	}
	t.Logf("cmd/cellb: %d lines of non-test Go code (budget %d)", total, lineBudget)
}
