//go:build linux

package fs

import (
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// dirFs is the default file system on Linux: an afero.Fs whose every path
// is resolved by the kernel below one directory descriptor with openat2(2)
// and RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS. A name can therefore never leave
// the bucket directory — not through "..", not through an absolute path and
// not through a symbolic link, whether that link points inside or outside:
// the store refuses to follow links at all, because a key reached through
// a link would share a file with another key while being locked and
// versioned as a different one.
//
// Operations that act on a name rather than open it (mkdir, unlink, rename,
// stat) open the parent directory the same way and then use the *at system
// call on the last component, which the kernel does not follow either.
type dirFs struct {
	root *os.File // the bucket directory, kept open for its descriptor
	fd   int      // root's descriptor
	path string   // the root path as given, for messages
}

// resolveFlags confine every lookup to the root and refuse symbolic links
// (RESOLVE_NO_SYMLINKS also covers /proc-style magic links).
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS

// newDirFs opens path as the root of a dirFs. It fails with
// errors.ErrUnsupported when the kernel lacks openat2 (Linux before 5.6).
func newDirFs(path string) (*dirFs, error) {
	root, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	d := &dirFs{root: root, fd: int(root.Fd()), path: path}
	fd, err := d.openat2(d.fd, ".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		root.Close()
		if errors.Is(err, unix.ENOSYS) {
			return nil, errors.ErrUnsupported
		}
		return nil, &os.PathError{Op: "openat2", Path: path, Err: err}
	}
	unix.Close(fd)
	return d, nil
}

// Close releases the root descriptor.
func (d *dirFs) Close() error { return d.root.Close() }

func (d *dirFs) rootFd() int { return d.fd }

// openat2 retries the transient failures the kernel documents for
// RESOLVE_BENEATH lookups (EAGAIN when a concurrent rename could have
// confused the walk) and interrupted calls.
func (d *dirFs) openat2(dirfd int, name string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode)
	}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// splitParent splits a clean name into its parent directory and last
// component.
func splitParent(name string) (dir, base string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ".", name
	}
	return name[:i], name[i+1:]
}

// withParent opens the parent directory of name (beneath the root, no
// links) and calls f with its descriptor and the last component.
func (d *dirFs) withParent(op, name string, f func(dirfd int, base string) error) error {
	name, err := cleanName(name)
	if err != nil {
		return &os.PathError{Op: op, Path: name, Err: err}
	}
	if name == "." {
		return &os.PathError{Op: op, Path: name, Err: unix.EINVAL}
	}
	dir, base := splitParent(name)
	dirfd := d.rootFd()
	if dir != "." {
		fd, err := d.openat2(dirfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return &os.PathError{Op: op, Path: name, Err: err}
		}
		defer unix.Close(fd)
		dirfd = fd
	}
	if err := ignoringEINTR(func() error { return f(dirfd, base) }); err != nil {
		return &os.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

func (d *dirFs) Name() string { return "cellb-dirfs:" + d.path }

func (d *dirFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	clean, err := cleanName(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	fd, err := d.openat2(d.rootFd(), clean, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	// The absolute name keeps messages clear, and keeps right the few
	// *os.File methods that look members up by path.
	return os.NewFile(uintptr(fd), filepath.Join(d.path, clean)), nil
}

func (d *dirFs) Open(name string) (afero.File, error) { return d.OpenFile(name, os.O_RDONLY, 0) }

func (d *dirFs) Create(name string) (afero.File, error) {
	return d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (d *dirFs) Mkdir(name string, perm os.FileMode) error {
	return d.withParent("mkdir", name, func(dirfd int, base string) error {
		return unix.Mkdirat(dirfd, base, uint32(perm.Perm()))
	})
}

// MkdirAll creates name and its missing parents. An existing component
// that is not a directory (a file, or a link the store will not follow)
// fails with ENOTDIR or ELOOP.
func (d *dirFs) MkdirAll(name string, perm os.FileMode) error {
	clean, err := cleanName(name)
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: name, Err: err}
	}
	if clean == "." {
		return nil
	}
	for i := 0; i <= len(clean); i++ {
		if i < len(clean) && clean[i] != '/' {
			continue
		}
		err := d.Mkdir(clean[:i], perm)
		if err == nil || !errors.Is(err, unix.EEXIST) {
			if err != nil {
				return err
			}
			continue
		}
		fi, err := d.Stat(clean[:i])
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			errno := unix.ENOTDIR
			if fi.Mode()&os.ModeSymlink != 0 {
				errno = unix.ELOOP
			}
			return &os.PathError{Op: "mkdir", Path: clean[:i], Err: errno}
		}
	}
	return nil
}

// Remove deletes a file or an empty directory, as os.Remove does.
func (d *dirFs) Remove(name string) error {
	return d.withParent("remove", name, func(dirfd int, base string) error {
		err := unix.Unlinkat(dirfd, base, 0)
		if err == nil {
			return nil
		}
		errDir := unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR)
		if errDir == nil {
			return nil
		}
		// Report the error that matches what name is, like os.Remove.
		if errDir != unix.ENOTDIR {
			return errDir
		}
		return err
	})
}

// RemoveAll deletes name and everything below it without following links.
func (d *dirFs) RemoveAll(name string) error {
	fi, err := d.Stat(name)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err == nil && fi.IsDir() {
		f, err := d.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil && err != io.EOF {
			return err
		}
		prefix := name + "/"
		if name == "." || name == "" {
			prefix = ""
		}
		for _, n := range names {
			if err := d.RemoveAll(prefix + n); err != nil {
				return err
			}
		}
	}
	err = d.Remove(name)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	return err
}

func (d *dirFs) Rename(oldname, newname string) error {
	var errno error
	err := d.withParent("rename", oldname, func(olddirfd int, oldbase string) error {
		return d.withParent("rename", newname, func(newdirfd int, newbase string) error {
			errno = unix.Renameat(olddirfd, oldbase, newdirfd, newbase)
			return errno
		})
	})
	if err == nil {
		return nil
	}
	if errno == nil {
		// Opening a parent failed; report that errno.
		var pe *os.PathError
		if errors.As(err, &pe) {
			errno = pe.Err
			for errors.As(pe.Err, &pe) {
				errno = pe.Err
			}
		}
	}
	if errno == nil {
		errno = err
	}
	return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errno}
}

// Stat describes name without following a link in its last component (a
// link reports ModeSymlink); links elsewhere on the path fail with ELOOP.
func (d *dirFs) Stat(name string) (os.FileInfo, error) {
	clean, err := cleanName(name)
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	var st unix.Stat_t
	if clean == "." {
		if err := ignoringEINTR(func() error { return unix.Fstat(d.rootFd(), &st) }); err != nil {
			return nil, &os.PathError{Op: "stat", Path: name, Err: err}
		}
		return newFileInfo(".", &st), nil
	}
	err = d.withParent("stat", clean, func(dirfd int, base string) error {
		return unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	_, base := splitParent(clean)
	return newFileInfo(base, &st), nil
}

// Chmod changes the mode through a descriptor opened beneath the root, so
// a link in the last component is refused rather than followed.
func (d *dirFs) Chmod(name string, mode os.FileMode) error {
	f, err := d.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.(*os.File).Chmod(mode)
}

func (d *dirFs) Chown(name string, uid, gid int) error {
	return d.withParent("chown", name, func(dirfd int, base string) error {
		return unix.Fchownat(dirfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

func (d *dirFs) Chtimes(name string, atime, mtime time.Time) error {
	return d.withParent("chtimes", name, func(dirfd int, base string) error {
		ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
		return unix.UtimesNanoAt(dirfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// fileInfo is an os.FileInfo built from a raw stat result. Sys returns the
// *unix.Stat_t, from which the store reads the inode number.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func newFileInfo(name string, st *unix.Stat_t) *fileInfo { return &fileInfo{name: name, st: *st} }

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }

func (fi *fileInfo) Mode() os.FileMode {
	m := os.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= os.ModeDir
	case unix.S_IFLNK:
		m |= os.ModeSymlink
	case unix.S_IFIFO:
		m |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= os.ModeSocket
	case unix.S_IFBLK:
		m |= os.ModeDevice
	case unix.S_IFCHR:
		m |= os.ModeDevice | os.ModeCharDevice
	}
	if fi.st.Mode&unix.S_ISUID != 0 {
		m |= os.ModeSetuid
	}
	if fi.st.Mode&unix.S_ISGID != 0 {
		m |= os.ModeSetgid
	}
	if fi.st.Mode&unix.S_ISVTX != 0 {
		m |= os.ModeSticky
	}
	return m
}
