package suite_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellb/cellb/core/store/memstore"
)

// between returns the text of s between the lines holding begin and end.
func between(t *testing.T, s, begin, end, where string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, begin)
	if !ok {
		t.Fatalf("%s has no %q", where, begin)
	}
	_, rest, _ = strings.Cut(rest, "\n")
	block, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("%s: no %q after %q", where, end, begin)
	}
	return strings.TrimSpace(block)
}

// TestConformanceDocSnippet: the Go block after <!-- snippet:shape --> in
// docs/conformance.md is docs_snippet_test.go's, which compiles.
func TestConformanceDocSnippet(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("docs_snippet_test.go")
	if err != nil {
		t.Fatal(err)
	}
	got := between(t, string(doc), "<!-- snippet:shape -->\n```go", "```", "docs/conformance.md")
	want := between(t, string(code), "// doc:shape begin", "// doc:shape end", "docs_snippet_test.go")
	if got != want {
		t.Fatalf("docs/conformance.md's snippet differs from docs_snippet_test.go's:\n--- doc\n%s\n--- code\n%s", got, want)
	}
}

// TestDocSnippetReport runs the snippet's report on an in-memory bucket:
// its summary is the one the comment shows.
func TestDocSnippetReport(t *testing.T) {
	var buf bytes.Buffer
	if err := report(t.Context(), &buf, memstore.New()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if first, _, _ := strings.Cut(out, "\n"); first != "r2test: 2 passed, 0 failed, 15 skipped" {
		t.Fatalf("the report's summary is %q, not the snippet's", first)
	}
	if !strings.Contains(out, `"suite": "r2test"`) {
		t.Fatalf("no JSON report:\n%s", out)
	}
}
