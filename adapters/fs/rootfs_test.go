//go:build unix

package fs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/store"
)

// rootFsStore is a Store on rootFs that also closes the os.Root.
type rootFsStore struct {
	*Store
	closeRoot func() error
}

func (s rootFsStore) Close() error {
	err := s.Store.Close()
	s.closeRoot()
	return err
}

func openRootFs(dir string) (store.Store, error) {
	fsys, closeRoot, err := newRootFs(dir)
	if err != nil {
		return nil, err
	}
	s, err := Open(dir, WithFs(fsys))
	if err != nil {
		closeRoot()
		return nil, err
	}
	return rootFsStore{s, closeRoot}, nil
}

// TestConformanceOnRootFs runs the suite on the file system used where
// openat2 is missing (other Unix systems, old Linux kernels). Pagination
// and the slow cases only repeat what TestConformance proves for the code
// above the file system, so they are left out here.
func TestConformanceOnRootFs(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, storetest.HarnessFunc(func(context.Context) (store.Store, error) {
		return openRootFs(dir)
	}), suite.Quick(), suite.Skip("pagination"))
}

// TestRootFsStaysInside: os.Root refuses links that leave the root, so no
// key reaches a file outside, even where the store cannot refuse every link.
func TestRootFsStaysInside(t *testing.T) {
	parent := t.TempDir()
	root, outside := filepath.Join(parent, "bucket"), filepath.Join(parent, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o666); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out": outside, "up": "../outside", "file": filepath.Join(outside, "secret")} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := openRootFs(root)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	before := tree(t, outside)
	ctx := t.Context()
	for _, k := range []string{"out/secret", "up/secret", "out/new", "up/a/b"} {
		if o, err := s.Get(ctx, k); err == nil {
			t.Errorf("get %s read %q from outside the root", k, o.Data)
		}
		if _, err := s.Put(ctx, k, []byte("evil"), store.PutOptions{}); err == nil {
			t.Errorf("put %s succeeded through a link leaving the root", k)
		}
		s.Delete(ctx, k)
	}
	if o, err := s.Get(ctx, "file"); err == nil {
		t.Errorf("get file read %q through a link leaving the root", o.Data)
	}
	if after := tree(t, outside); !mapsEqual(before, after) {
		t.Fatalf("operations through links changed files:\nbefore %q\nafter  %q", before, after)
	}
}
