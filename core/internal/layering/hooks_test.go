package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// protocolPackages keep their decisions pure and their production code
// free of test hooks: the simulator and the tests drive them through
// internal constructors and step functions, and replace decisions by
// passing other ones in (docs/fleet.md, "How the protocol code is
// structured and tested").
var protocolPackages = []string{"core/fleet"}

// hookWords may not appear in an identifier of a protocol package's
// production code: a type, field, function or variable named for the
// simulator or a test hook is a seam that belongs in a test file.
var hookWords = []string{"sim", "hook"}

// TestProtocolCodeHasNoTestHooks parses the production (non-test) files
// of each protocol package: no identifier names the simulator or a hook,
// and no struct field is documented as being there for tests.
func TestProtocolCodeHasNoTestHooks(t *testing.T) {
	root := workspaceRoot(t)
	for _, dir := range protocolPackages {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		parsed := 0
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			parsed++
			for _, bad := range hookViolations(fset, f) {
				t.Errorf("%s/%s", dir, bad)
			}
		}
		if parsed == 0 {
			t.Fatalf("%s: no production files found", dir)
		}
	}
}

// hookViolations lists, as "file:line: what", the identifiers of f that
// name the simulator or a hook, and the struct fields whose comment says
// they are for tests.
func hookViolations(fset *token.FileSet, f *ast.File) []string {
	var bad []string
	at := func(p token.Pos) string {
		pos := fset.Position(p)
		return filepath.Base(pos.Filename) + ":" + strconv.Itoa(pos.Line)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			lower := strings.ToLower(n.Name)
			for _, w := range hookWords {
				if strings.Contains(lower, w) {
					bad = append(bad, at(n.Pos())+": identifier "+n.Name+" names a test seam")
					break
				}
			}
		case *ast.Field:
			for _, c := range []*ast.CommentGroup{n.Doc, n.Comment} {
				if c != nil && strings.Contains(strings.ToLower(c.Text()), "for tests") {
					bad = append(bad, at(n.Pos())+": a struct field is there for tests: "+strings.TrimSpace(c.Text()))
				}
			}
		}
		return true
	})
	return bad
}

// TestHookViolationsFindsSeams: the check finds the seams it is meant to
// (the shape fleet.Node had: a simHooks field, a rounds counter for tests)
// and passes a struct without them.
func TestHookViolationsFindsSeams(t *testing.T) {
	const hooked = `package p
type Node struct {
	rounds uint64 // renewal attempts finished, for tests that step a fake clock
	sim simHooks
}
type simHooks struct{ manual bool }
`
	const clean = `package p
type Node struct {
	rules rules
	shell *shell
}
`
	for _, c := range []struct {
		src  string
		want int
	}{{hooked, 4}, {clean, 0}} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", c.src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if got := hookViolations(fset, f); len(got) != c.want {
			t.Errorf("found %d violations, want %d: %q", len(got), c.want, got)
		}
	}
}
