//go:build unix

package fs

import (
	"os"
	"time"

	"github.com/spf13/afero"
)

// rootFs is the default file system where openat2(2) is missing (other
// Unix systems, Linux before 5.6): an afero.Fs over *os.Root. os.Root
// guarantees that no name leaves the root, through ".." or a symbolic
// link; unlike dirFs it follows links that stay inside the root, so there
// the store's refusal of links is weaker (see the package documentation).
type rootFs struct{ r *os.Root }

func newRootFs(path string) (afero.Fs, func() error, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, nil, err
	}
	return rootFs{r}, r.Close, nil
}

func (f rootFs) Name() string { return "cellb-rootfs:" + f.r.Name() }

func (f rootFs) Create(name string) (afero.File, error) { return f.file(f.r.Create(name)) }

func (f rootFs) Open(name string) (afero.File, error) { return f.file(f.r.Open(name)) }

func (f rootFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	return f.file(f.r.OpenFile(name, flag, perm))
}

// file keeps a nil *os.File from turning into a non-nil afero.File.
func (rootFs) file(fl *os.File, err error) (afero.File, error) {
	if err != nil {
		return nil, err
	}
	return fl, nil
}

func (f rootFs) Mkdir(name string, perm os.FileMode) error    { return f.r.Mkdir(name, perm) }
func (f rootFs) MkdirAll(name string, perm os.FileMode) error { return f.r.MkdirAll(name, perm) }
func (f rootFs) Remove(name string) error                     { return f.r.Remove(name) }
func (f rootFs) RemoveAll(name string) error                  { return f.r.RemoveAll(name) }
func (f rootFs) Rename(oldname, newname string) error         { return f.r.Rename(oldname, newname) }

// Stat does not follow a link in the last component, like dirFs.Stat.
func (f rootFs) Stat(name string) (os.FileInfo, error)     { return f.r.Lstat(name) }
func (f rootFs) Chmod(name string, mode os.FileMode) error { return f.r.Chmod(name, mode) }
func (f rootFs) Chown(name string, uid, gid int) error     { return f.r.Chown(name, uid, gid) }
func (f rootFs) Chtimes(name string, atime, mtime time.Time) error {
	return f.r.Chtimes(name, atime, mtime)
}
