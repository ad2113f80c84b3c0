//go:build linux

package fs

import (
	"os"
	"path"
	"strconv"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// openUnnamed creates a file with no name in the open directory dir:
// open(2) with O_TMPFILE. Nothing can see it until linkUnnamed names it,
// and if the process dies first the kernel frees it.
func (d *dirFs) openUnnamed(dir afero.File, perm os.FileMode) (afero.File, error) {
	dfd, err := fdOf(dir)
	if err != nil {
		return nil, err
	}
	var fd int
	err = ignoringEINTR(func() error {
		var e error
		fd, e = unix.Openat(dfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
		return e
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir.Name() + " (unnamed file)", Err: err}
	}
	return os.NewFile(uintptr(fd), dir.Name()+"/(unnamed)"), nil
}

// linkUnnamed gives f, made by openUnnamed, the name path.Base(name) in
// the open directory dir (name is the full name, for messages): linkat(2)
// of the descriptor through /proc/self/fd, which needs no privilege, where
// AT_EMPTY_PATH does. It fails with EEXIST when the name is taken, and
// with ENOENT when dir was removed since it was opened. The name is one
// component made beneath dir, so it cannot leave the root.
func (d *dirFs) linkUnnamed(f, dir afero.File, name string) error {
	base := path.Base(name)
	if base == "." || base == ".." || base == "/" {
		return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: errOutsideRoot}
	}
	ffd, err := fdOf(f)
	if err != nil {
		return err
	}
	dfd, err := fdOf(dir)
	if err != nil {
		return err
	}
	proc := "/proc/self/fd/" + strconv.Itoa(ffd)
	err = ignoringEINTR(func() error { return unix.Linkat(unix.AT_FDCWD, proc, dfd, base, unix.AT_SYMLINK_FOLLOW) })
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: err}
	}
	return nil
}

// fdOf is the descriptor of a file of this file system.
func fdOf(f afero.File) (int, error) {
	fd, ok := f.(fder)
	if !ok {
		return -1, errNoFd
	}
	return int(fd.Fd()), nil
}
