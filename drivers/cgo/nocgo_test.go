//go:build cgo

package cgo

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPackageBuildsWithoutCgo: without cgo the package compiles to its
// documentation alone (nocgo.go), so building or vetting every package of
// the repository with CGO_ENABLED=0 works; every other file, tests
// included, carries the cgo constraint.
func TestPackageBuildsWithoutCgo(t *testing.T) {
	nocgo := append(os.Environ(), "CGO_ENABLED=0")
	vet := exec.Command("go", "vet", ".")
	vet.Env = nocgo
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go vet: %v\n%s", err, out)
	}
	list := exec.Command("go", "list", "-f", "{{.GoFiles}} {{.TestGoFiles}} {{.XTestGoFiles}}", ".")
	list.Env = nocgo
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("CGO_ENABLED=0 go list: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "[doc.go nocgo.go] [] []" {
		t.Fatalf("without cgo the package has files %s, want [doc.go nocgo.go] [] []", got)
	}
}
