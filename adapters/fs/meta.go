package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
)

// MetaDir is the directory at a bucket's root that holds the store's own
// files (lock files, temporary files, sidecar records). The store creates
// it on the first write.
const MetaDir = metaDir

// RemoveUnusedMeta removes root's MetaDir when it serves no object: the
// bucket lists no key (no file or directory outside MetaDir) and MetaDir
// holds no sidecar record and no temporary file, only lock files. A tool
// that wrote to a directory which had no MetaDir before, and deleted what
// it wrote, calls it (after closing its Store) to leave the directory as
// it found it. It must not be called while another Store may be open on
// root: that Store's lock files would go. It reports whether it removed
// MetaDir.
func RemoveUnusedMeta(root string) (bool, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return false, err
	}
	found := false
	for _, e := range entries {
		if e.Name() != metaDir {
			return false, nil // the bucket holds something
		}
		found = true
	}
	if !found {
		return false, nil
	}
	for _, dir := range []string{tmpDir, recordDir} {
		inUse := false
		err := filepath.WalkDir(filepath.Join(root, dir), func(_ string, d iofs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				inUse = true
				return filepath.SkipAll
			}
			return err
		})
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return false, err
		}
		if inUse {
			return false, nil
		}
	}
	if err := os.RemoveAll(filepath.Join(root, metaDir)); err != nil {
		return false, err
	}
	return true, nil
}
