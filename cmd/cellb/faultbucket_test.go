package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// faultBuild builds the faulty cellb binary once per test run.
var faultBuild struct {
	sync.Once
	path string
	err  error
}

// faultMuxAnchor is the call in bucket.go that faultCellbBinary extends.
const faultMuxAnchor = "store.NewURLMux(fsstore.Register,"

// faultCellbBinary builds cellb with one more bucket URL scheme,
// faultfile:///dir (testdata/faultbucket.go): the local-files bucket at dir
// behind core/store/faultstore, faults from the URL's query. Nothing in
// the production code changes: `go build -overlay` adds
// testdata/faultbucket.go to the package and gives the compiler a copy of
// bucket.go whose bucketMux registers the scheme too. Everything else is
// the real `cellb serve`, flags included, so what runs on a faulty files
// bucket is exactly what runs on a real one.
//
// The test binary cannot do this itself (a TestMain child running cellb's
// main): serve opens its bucket through bucketMux(), which takes no
// argument, and production code has no hook to add a scheme.
func faultCellbBinary(t testing.TB) string {
	t.Helper()
	faultBuild.Do(func() { faultBuild.path, faultBuild.err = buildFaultCellb() })
	if faultBuild.err != nil {
		t.Fatal(faultBuild.err)
	}
	return faultBuild.path
}

func buildFaultCellb() (string, error) {
	src, err := os.ReadFile("bucket.go")
	if err != nil {
		return "", err
	}
	if n := strings.Count(string(src), faultMuxAnchor); n != 1 {
		return "", fmt.Errorf("bucket.go holds %q %d times, want once: update faultCellbBinary to register the faultfile scheme", faultMuxAnchor, n)
	}
	patched := strings.Replace(string(src), faultMuxAnchor, "store.NewURLMux(registerFaultFile, fsstore.Register,", 1)
	dir, err := os.MkdirTemp("", "cellb-faultbin-")
	if err != nil {
		return "", err
	}
	here, err := os.Getwd()
	if err != nil {
		return "", err
	}
	extra, err := filepath.Abs(filepath.Join("testdata", "faultbucket.go"))
	if err != nil {
		return "", err
	}
	patchedPath := filepath.Join(dir, "bucket.go")
	if err := os.WriteFile(patchedPath, []byte(patched), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(here, "bucket.go"):         patchedPath,
		filepath.Join(here, "zz_faultbucket.go"): extra,
	}})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", err
	}
	linked := filepath.Join(dir, "cellb-faulty.linked")
	out, err := exec.Command("go", "build", "-overlay", overlayPath, "-o", linked, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build -overlay (faultfile scheme): %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "cellb-faulty")
	return bin, copyBinary(linked, bin)
}
