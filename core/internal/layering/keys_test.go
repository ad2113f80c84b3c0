package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// keySpellings are pieces of the bucket layout that only core/layout may
// spell in a string literal: the cells/ tree and its records and logs,
// node leases, the wake index, the peer key, the probe's and R2's objects.
// Everything else builds its keys with core/layout's functions.
var keySpellings = []string{
	"cells/", "own.json", "/ltx/e", "/changeset/e", "/backup/e",
	"nodes/",
	"wake/entries", "wake/retired", "wake/waker.json", "wake/format.json", "wake-format.json",
	"wake-v2/", "wake-retired-v2/",
	"peer-auth.json",
	"probe/",
	"r2/",
	"/bundle/", ".ltxb", ".loss.json",
}

// layoutDir is the one directory allowed to spell keys.
const layoutDir = "core/layout"

// keySpellingAllowed lists the few places (a directory or file relative to
// the workspace root, and the spelling) where a key may still be spelled,
// each with its reason.
var keySpellingAllowed = []struct{ path, spelling, why string }{}

// keyLiterals reports every string literal of a Go source that spells a
// piece of the bucket layout. Comments do not count.
func keyLiterals(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			s = lit.Value
		}
		for _, k := range keySpellings {
			if strings.Contains(s, k) {
				out = append(out, fmt.Sprintf("%s: %s spells the bucket key %q (use core/layout)", fset.Position(lit.Pos()), lit.Value, k))
			}
		}
		return true
	})
	return out, nil
}

func keySpellingIsAllowed(rel, line string) bool {
	for _, a := range keySpellingAllowed {
		if strings.HasPrefix(rel, a.path) && strings.Contains(line, fmt.Sprintf("%q", a.spelling)) {
			return true
		}
	}
	return false
}

// TestNoKeySpelledOutsideLayout fails when non-test Go code outside
// core/layout spells a key of the bucket layout in a string literal.
func TestNoKeySpelledOutsideLayout(t *testing.T) {
	root, err := filepath.Abs(workspaceRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || rel == layoutDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		found, err := keyLiterals(rel, src)
		if err != nil {
			return err
		}
		for _, f := range found {
			if !keySpellingIsAllowed(rel, f) {
				t.Error(f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files found under %s: the walk is not seeing the repository", files, root)
	}
}

// TestKeyLiteralsCatchesSpellings shows the check on the spellings this
// repository had before core/layout: each is reported, comments are not.
func TestKeyLiteralsCatchesSpellings(t *testing.T) {
	src := `package p

// OwnKey is cells/<cell>/own.json (a comment: not reported).
func OwnKey(cell string) string { return "cells/" + cell + "/own.json" }
func NodeKey(node string) string { return "nodes/" + node + ".json" }
const EntriesPrefix = "wake/entries/"
const KeyRecord = ` + "`fleet/peer-auth.json`" + `
var probe = fmt.Sprintf("probe/cas-%d", 1)
func msg(c string) string { return fmt.Sprintf("record cells/%s/own.json is missing", c) }
`
	got, err := keyLiterals("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`p.go:4:42: "cells/"`, `p.go:4:60: "/own.json"`, `p.go:5:43: "nodes/"`, `p.go:6:23: "wake/entries/"`,
		"p.go:7:19: `fleet/peer-auth.json`", `p.go:8:25: "probe/cas-%d"`,
		`"record cells/%s/own.json is missing" spells the bucket key "cells/"`,
		`"record cells/%s/own.json is missing" spells the bucket key "own.json"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("not reported: %s\nreported:\n%s", want, all)
		}
	}
	if strings.Contains(all, "p.go:3:") {
		t.Errorf("a comment is reported:\n%s", all)
	}
	if len(got) != 8 {
		t.Errorf("%d reports, want 8:\n%s", len(got), all)
	}
}
