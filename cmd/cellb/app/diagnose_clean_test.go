package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/store"
)

// bucketListing is every key of a files bucket and every file of its
// directory outside the store's own metadata.
func bucketListing(t *testing.T, dir string) []string {
	t.Helper()
	s, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	var out []string
	opts := store.ListOptions{}
	for {
		page, err := s.List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			out = append(out, "key "+o.Key)
		}
		if page.NextToken == "" {
			break
		}
		opts.Token = page.NextToken
	}
	// The directory as ls shows it, down to the store's own directory
	// (which is listed, not entered).
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if rel != "." {
			out = append(out, "path "+rel)
		}
		if rel == fsstore.MetaDir {
			return filepath.SkipDir
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// TestDiagnoseLeavesNothingBehind: the docs say diagnose changes nothing;
// a files bucket lists the same keys and paths before and after a full
// run, whether it was a fresh directory (where the store's own directory,
// .cellb-meta, made by diagnose's writes, goes again) or one in use.
func TestDiagnoseLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite on the local file system")
	}
	t.Run("fresh directory", func(t *testing.T) { diagnoseChangesNothing(t, t.TempDir()) })
	t.Run("bucket in use", func(t *testing.T) {
		dir := t.TempDir()
		s, err := fsstore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(t.Context(), "app/kept", []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		store.Close(s)
		diagnoseChangesNothing(t, dir)
	})
}

func diagnoseChangesNothing(t *testing.T, dir string) {
	before := bucketListing(t, dir)
	var out output
	if code := run(t.Context(), out.env(), []string{"diagnose", "--large-mib", "1", "--quiet", "file://" + dir}); code != diagnoseOK {
		t.Fatalf("exit %d\n%s%s", code, &out.stdout, &out.stderr)
	}
	if after := bucketListing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("diagnose changed the bucket:\nbefore %s\nafter  %s", strings.Join(before, ", "), strings.Join(after, ", "))
	}
	if out.stderr.Len() != 0 {
		t.Fatalf("--quiet printed progress:\n%s", &out.stderr)
	}
}
