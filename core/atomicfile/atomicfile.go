// Package atomicfile replaces files on the local disk so that a crash
// leaves either the old content or the new, never a mix: the new content
// goes to a temporary file in the same directory, is fsynced, renamed over
// the target, and the directory is fsynced so the rename itself survives.
// A failure at any step before the rename leaves the old file untouched
// and removes the temporary file.
//
// It is the one copy of that sequence: the drivers' database restores, the
// single-host shard records and `cellb restore`'s output use it. (The
// local-files bucket adapter, adapters/fs, writes through its own
// directory handles and keeps its own sequence.)
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write makes path hold what write puts into a new file: write fills a
// temporary file in path's directory, which is fsynced and renamed over
// path, and the directory is fsynced. As with os.WriteFile, perm is the
// new file's permission bits when path does not exist; a replaced file
// keeps its own. When write or any step fails, path is left as it was and
// the temporary file is removed.
func Write(path string, perm os.FileMode, write func(f *os.File) error) error {
	tmp, err := Temp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*", func(f *os.File) error {
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
		if err := f.Chmod(perm); err != nil {
			return err
		}
		return write(f)
	})
	if err != nil {
		return err
	}
	if err := Commit(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteFile makes path hold data, as Write.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// Temp creates a new file in dir (named by pattern, as os.CreateTemp),
// has write fill it, fsyncs and closes it, and returns its name, for a
// caller that checks the file or prepares the target before Commit. On
// failure no file is left.
func Temp(dir, pattern string, write func(f *os.File) error) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// Commit renames tmp, a synced file in path's directory, over path and
// fsyncs the directory. When the rename fails, path is untouched and tmp
// is left to the caller.
func Commit(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// RemoveIfExist removes each of paths that exists; a missing one is no error.
// The drivers remove an old database's journal, WAL and shared-memory
// files this way before Commit puts a new database in its place.
func RemoveIfExist(paths ...string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// SyncDir fsyncs the directory dir, making its entries (created, renamed,
// linked and removed files) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
