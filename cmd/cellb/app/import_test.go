package app

import (
	"strings"
	"testing"

	"github.com/cellb/cellb/core/cli"
)

// import takes a fleet's bucket URL or --data-dir, never both nor
// neither; a source that is not a database fails in one line.
func TestImportArguments(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"import", "--data-dir", dir, "file://" + dir, "Notes:main", "app.db"},
		{"import", "Notes:main", "app.db"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "give a fleet's <bucket-url> or --data-dir") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "import", "--data-dir", dir, "Notes:main", "import_test.go")
	if code != cli.ExitFailed || !strings.Contains(stderr, "is not a SQLite database to import") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a source that is not a database: exit %d, %q", code, stderr)
	}
}
