// Package layering holds the test that keeps CellB's dependencies pointing
// one way: core imports no adapter, driver or cloud SDK; adapters and
// drivers import only core's packages; conformance imports only core; only
// cmd/cellb, the example apps and the tests module (tests/) may import
// everything; only cmd/cellb (and tests) may import the example apps;
// nothing imports the tests module, which holds tests only. Inside core,
// layers_test.go keeps the formats, the ports, the runtime and the fleet
// apart.
package layering

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const prefix = "github.com/cellb/cellb/"

// forbiddenInCore are module path prefixes core must never reach, even
// indirectly: cloud SDKs and SQLite libraries belong to adapters and drivers.
var forbiddenInCore = []string{
	prefix + "adapters/", prefix + "drivers/", prefix + "conformance", prefix + "cmd/", prefix + "examples",
	"github.com/aws/", "cloud.google.com/", "google.golang.org/", "github.com/Azure/",
	"github.com/ncruces/", "github.com/mattn/", "modernc.org/", "github.com/spf13/afero",
}

type pkg struct {
	ImportPath   string
	Module       *struct{ Path string }
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
	Standard     bool
	GoFiles      []string
}

func workspaceRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// deps lists the packages pkg links (go list -deps, non-test).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = workspaceRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// matches reports whether an import path is one of prefixes or below one,
// and which.
func matches(path string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return p, true
		}
	}
	return "", false
}

func listPackages(t *testing.T, root string) []pkg {
	cmd := exec.Command("go", "list", "-e", "-deps=false", "-json", prefix+"...")
	cmd.Dir = root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no CellB packages")
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func area(path string) string {
	rest := strings.TrimPrefix(path, prefix)
	parts := strings.SplitN(rest, "/", 3)
	switch parts[0] {
	case "adapters", "drivers":
		if len(parts) > 1 {
			return parts[0] + "/" + parts[1]
		}
	}
	return parts[0]
}

// examplesRule says why a package of area own may not import imp, or ""
// when it may: the example apps (examples/) may import anything, and only
// cmd/cellb, which serves them, and the examples themselves import them.
// Tests are held to their area's other rules.
func examplesRule(own, imp string, testCode bool) string {
	if !strings.HasPrefix(imp, prefix) || area(imp) != "examples" || testCode {
		return ""
	}
	if own == "examples" || own == "cmd" {
		return ""
	}
	return "only cmd/cellb imports the example apps"
}

// testsRule says why a package of area own may not import imp, or "" when
// it may: the tests module (tests/, docs/testing.md) may import anything
// and nothing may import it, not even from a test; it is no library.
func testsRule(own, imp string) string {
	if !strings.HasPrefix(imp, prefix) || area(imp) != "tests" || own == "tests" {
		return ""
	}
	return "nothing imports the tests module: it holds tests only"
}

// testsModuleFiles says why a package of the tests module has code outside
// its tests, or "": its packages hold _test.go files and a doc.go only
// (package tests/internal/... may hold the tests' shared helpers).
func testsModuleFiles(p pkg) string {
	rel := strings.TrimPrefix(p.ImportPath, prefix)
	if area(p.ImportPath) != "tests" || strings.HasPrefix(rel, "tests/internal/") {
		return ""
	}
	for _, f := range p.GoFiles {
		if f != "doc.go" {
			return "the tests module holds tests: " + f + " is not a _test.go file (helpers go into tests/internal/)"
		}
	}
	return ""
}

func TestDependenciesPointOneWay(t *testing.T) {
	root := workspaceRoot(t)
	for _, p := range listPackages(t, root) {
		if !strings.HasPrefix(p.ImportPath, prefix) {
			continue
		}
		own := area(p.ImportPath)
		if why := testsModuleFiles(p); why != "" {
			t.Errorf("%s: %s", p.ImportPath, why)
		}
		check := func(kind string, imports []string, testCode bool) {
			for _, imp := range imports {
				if isStd(imp) {
					continue
				}
				if why := testsRule(own, imp); why != "" {
					t.Errorf("%s (%s) imports %s: %s", p.ImportPath, kind, imp, why)
				}
				if why := examplesRule(own, imp, testCode); why != "" {
					t.Errorf("%s (%s) imports %s: %s", p.ImportPath, kind, imp, why)
				}
				switch {
				case own == "core":
					if testCode && !strings.HasPrefix(imp, prefix) {
						continue // tests may use small test helpers
					}
					for _, bad := range forbiddenInCore {
						if strings.HasPrefix(imp, bad) {
							t.Errorf("%s (%s) imports %s: core must not depend on adapters, drivers or cloud SDKs", p.ImportPath, kind, imp)
						}
					}
				case own == "conformance":
					if strings.HasPrefix(imp, prefix) && area(imp) != "core" && area(imp) != "conformance" {
						t.Errorf("%s (%s) imports %s: conformance may import only core", p.ImportPath, kind, imp)
					}
					if !strings.HasPrefix(imp, prefix) && !testCode {
						t.Errorf("%s imports %s: conformance may import only core and the standard library", p.ImportPath, imp)
					}
				case strings.HasPrefix(own, "adapters/") || strings.HasPrefix(own, "drivers/"):
					if testCode {
						// An adapter's or driver's tests run the conformance suites on it.
						if strings.HasPrefix(imp, prefix) && area(imp) != "core" && area(imp) != "conformance" && area(imp) != own {
							t.Errorf("%s (%s) imports %s: tests of %s may import core and conformance only", p.ImportPath, kind, imp, own)
						}
						continue
					}
					if strings.HasPrefix(imp, prefix) && area(imp) != "core" && area(imp) != own {
						t.Errorf("%s imports %s: %s may import only core", p.ImportPath, imp, own)
					}
				}
			}
		}
		check("imports", p.Imports, false)
		check("test imports", p.TestImports, true)
		check("external test imports", p.XTestImports, true)
	}
}

// TestCoreClosureIsClean checks core's whole import graph, not only its
// direct imports: nothing core links may come from a forbidden module.
func TestCoreClosureIsClean(t *testing.T) {
	root := workspaceRoot(t)
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", prefix+"core/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		for _, bad := range forbiddenInCore {
			if line != "" && strings.HasPrefix(line, bad) {
				t.Errorf("core links %s", line)
			}
		}
	}
}

// TestExamplesRule: the rule lets cmd/cellb and the examples import the
// example apps, and nothing else outside tests.
func TestExamplesRule(t *testing.T) {
	counter := prefix + "examples/counter"
	cases := []struct {
		own, imp string
		test     bool
		allowed  bool
	}{
		{"cmd", counter, false, true},
		{"examples", counter, false, true},
		{"examples", prefix + "adapters/fs", false, true},
		{"examples", prefix + "drivers/wasm", false, true},
		{"core", counter, false, false},
		{"conformance", counter, false, false},
		{"adapters/fs", counter, false, false},
		{"drivers/wasm", counter, false, false},
		{"adapters/fs", counter, true, true},
	}
	for _, c := range cases {
		if got := examplesRule(c.own, c.imp, c.test) == ""; got != c.allowed {
			t.Errorf("%s importing %s (test %v): allowed %v, want %v", c.own, c.imp, c.test, got, c.allowed)
		}
	}
}

// TestTestsRule: the tests module may import anything and nothing may
// import it, from code or tests; its packages hold tests and a doc.go.
func TestTestsRule(t *testing.T) {
	tests := prefix + "tests"
	cases := []struct {
		own, imp string
		allowed  bool
	}{
		{"tests", prefix + "cmd/cellb/app", true},
		{"tests", prefix + "examples/counter", true},
		{"tests", prefix + "adapters/s3", true},
		{"tests", tests + "/internal/helper", true},
		{"cmd", tests, false},
		{"core", tests, false},
		{"examples", tests + "/internal/helper", false},
		{"adapters/fs", tests, false},
		{"conformance", tests, false},
	}
	for _, c := range cases {
		if got := testsRule(c.own, c.imp) == ""; got != c.allowed {
			t.Errorf("%s importing %s: allowed %v, want %v", c.own, c.imp, got, c.allowed)
		}
	}
	for _, c := range []struct {
		p  pkg
		ok bool
	}{
		{pkg{ImportPath: tests, GoFiles: []string{"doc.go"}}, true},
		{pkg{ImportPath: tests + "/internal/helper", GoFiles: []string{"helper.go"}}, true},
		{pkg{ImportPath: tests, GoFiles: []string{"doc.go", "helper.go"}}, false},
		{pkg{ImportPath: prefix + "cmd/cellb/app", GoFiles: []string{"app.go"}}, true},
	} {
		if got := testsModuleFiles(c.p) == ""; got != c.ok {
			t.Errorf("%s with %v: allowed %v, want %v", c.p.ImportPath, c.p.GoFiles, got, c.ok)
		}
	}
}
