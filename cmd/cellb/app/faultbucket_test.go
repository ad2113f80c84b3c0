package app

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// faultBuild builds the faulty cellb binary once per test run.
var faultBuild struct {
	sync.Once
	path string
	err  error
}

// faultMain is the main of the faulty cellb: cellb's own main with one
// more bucket scheme, as docs/adapters.md shows a store author's.
const faultMain = `package main

import (
	"os"

	"github.com/cellb/cellb/cmd/cellb/app"
	"github.com/cellb/cellb/core/store"
)

func main() {
	os.Exit(app.Main(app.Options{Buckets: []func(*store.URLMux){registerFaultFile}}))
}
`

// faultCellbBinary builds cellb with one more bucket URL scheme,
// faultfile:///dir (testdata/faultbucket.go): the local-files bucket at dir
// behind core/store/faultstore, faults from the URL's query. Nothing in
// the production code changes: `go build -overlay` adds
// testdata/faultbucket.go to the main package and gives the compiler a
// main.go that passes its Register in app.Options.Buckets. Everything else
// is the real `cellb serve`, flags included, so what runs on a faulty
// files bucket is exactly what runs on a real one.
func faultCellbBinary(t testing.TB) string {
	t.Helper()
	faultBuild.Do(func() { faultBuild.path, faultBuild.err = buildFaultCellb() })
	if faultBuild.err != nil {
		t.Fatal(faultBuild.err)
	}
	return faultBuild.path
}

func buildFaultCellb() (string, error) {
	dir, err := os.MkdirTemp("", "cellb-faultbin-")
	if err != nil {
		return "", err
	}
	mainPkg, err := filepath.Abs(mainDir)
	if err != nil {
		return "", err
	}
	extra, err := filepath.Abs(filepath.Join("testdata", "faultbucket.go"))
	if err != nil {
		return "", err
	}
	mainPath := filepath.Join(dir, "main.go")
	if err := os.WriteFile(mainPath, []byte(faultMain), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(mainPkg, "main.go"):           mainPath,
		filepath.Join(mainPkg, "zz_faultbucket.go"): extra,
	}})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", err
	}
	linked := filepath.Join(dir, "cellb-faulty.linked")
	out, err := exec.Command("go", "build", "-overlay", overlayPath, "-o", linked, mainDir).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build -overlay (faultfile scheme): %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "cellb-faulty")
	return bin, copyBinary(linked, bin)
}
