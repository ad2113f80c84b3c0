package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bucketRules are the portable rules store.Bucket applies for every
// backend (issue 24, point 1). An adapter that calls one of them again
// repeats the Bucket's work, and the copies drift apart: the rules have
// one home.
var bucketRules = map[string]bool{
	"ValidateKey":        true,
	"ValidatePrefix":     true,
	"ValidatePutOptions": true,
	"CheckPut":           true,
}

// TestAdaptersLeaveTheRulesToTheBucket: no adapter's code (tests aside)
// calls the Bucket's rules; an adapter is its driver's SDK calls and its
// Classify.
func TestAdaptersLeaveTheRulesToTheBucket(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(workspaceRoot(t), "adapters", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no adapters found: %v", err)
	}
	for _, dir := range dirs {
		for _, v := range bucketRuleCalls(t, dir) {
			t.Errorf("%s calls store.%s, which store.Bucket applies for every adapter", v.pos, v.name)
		}
	}
}

type ruleCall struct{ pos, name string }

// bucketRuleCalls lists the calls of store.<rule> in dir's non-test Go
// files.
func bucketRuleCalls(t *testing.T, dir string) []ruleCall {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []ruleCall
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "store" && bucketRules[sel.Sel.Name] {
				out = append(out, ruleCall{fset.Position(sel.Pos()).String(), sel.Sel.Name})
			}
			return true
		})
	}
	return out
}

// TestBucketRuleCallsAreFound: the scan finds a call it must refuse.
func TestBucketRuleCallsAreFound(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nimport \"github.com/cellb/cellb/core/store\"\n\nfunc f(k string) error { return store.ValidateKey(k) }\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := bucketRuleCalls(t, dir); len(got) != 1 || got[0].name != "ValidateKey" {
		t.Fatalf("found %v, want the one ValidateKey call", got)
	}
}
