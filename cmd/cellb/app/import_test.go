package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestImportOnS3 imports the shared vectors' Litestream replica into a
// fleet's cell on the S3 server of .ci/run, twice (the second is
// refused), and restores it.
func TestImportOnS3(t *testing.T) {
	useS3(t)
	dir := litestreamDir(t)
	bucket := fmt.Sprintf("s3://%s/import-%d", os.Getenv("CELLB_TEST_S3_BUCKET"), time.Now().UnixNano())
	if code, _, stderr := runCLI(t, "import", bucket, "--name", "Notes:main", filepath.Join(dir, "replica")); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI(t, "import", bucket, "--name", "Notes:main", filepath.Join(dir, "app.db")); code != cli.ExitFailed || !strings.Contains(stderr, "has been written before") {
		t.Fatalf("the second import: exit %d, %s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "out.db")
	if code, _, stderr := runCLI(t, "restore", "--quiet", "--name", bucket, "Notes:main", out); code != 0 {
		t.Fatal(stderr)
	}
	if got := strings.Join(rowsOf(t, out), " "); got != "a=upd5 b=2 c=3 k1=v1 k2=v2 k3=v3 k4=v4 k5=v5" {
		t.Fatalf("the cell holds %s", got)
	}
}
