// Package testvectors finds the test vectors made outside this project,
// which sit in ../shared/testdata next to the repository (they are never
// copied into it). Tests skip when the vectors are absent, except in CI
// (CI=true), where their absence is a failure.
package testvectors

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the directory of the named vector set under shared/testdata
// (e.g. "celld-ltx-golden"), or skips/fails t when it is missing.
func Dir(t testing.TB, set string) string {
	t.Helper()
	if d := os.Getenv("CELLB_TESTDATA"); d != "" {
		return check(t, filepath.Join(d, set))
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return check(t, filepath.Join(dir, "..", "shared", "testdata", set))
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	missing(t, "no go.work above "+wd)
	return ""
}

func check(t testing.TB, dir string) string {
	t.Helper()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		missing(t, dir+" is missing")
	}
	return dir
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("test vectors not found (%s); CI must have ../shared/testdata next to the checkout", why)
	}
	t.Skipf("test vectors not found (%s); set CELLB_TESTDATA to the shared/testdata directory", why)
}
