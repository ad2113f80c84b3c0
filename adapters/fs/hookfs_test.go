//go:build unix

package fs

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/afero"
)

// hookFs wraps a file system so tests can fail, delay or watch chosen
// operations. A hook returns a non-nil error to make the operation fail
// without doing it.
type hookFs struct {
	afero.Fs
	mu sync.Mutex
	// before runs before Rename (name, newname), Remove and Mkdir (name,
	// ""), and OpenFile (name, "").
	before func(op, name, newname string) error
	// after runs after a Rename that succeeded.
	after func(op, name, newname string)
	// fileSync, if set, runs instead of Sync on files opened for writing.
	fileSync func(name string, f afero.File) error
	// unnamed passes the base file system's unnamed files through (see
	// unnamedFs), with the hooks "open-unnamed" (the directory's name) and
	// "link" (newname, the full name). Without it the store writes every
	// object under a temporary name.
	unnamed bool
}

func (h *hookFs) hook(op, name, newname string) error {
	h.mu.Lock()
	f := h.before
	h.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(op, name, newname)
}

func (h *hookFs) setBefore(f func(op, name, newname string) error) {
	h.mu.Lock()
	h.before = f
	h.mu.Unlock()
}

func (h *hookFs) Rename(oldname, newname string) error {
	if err := h.hook("rename", oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	err := h.Fs.Rename(oldname, newname)
	if err == nil && h.after != nil {
		h.after("rename", oldname, newname)
	}
	return err
}

func (h *hookFs) Remove(name string) error {
	if err := h.hook("remove", name, ""); err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return h.Fs.Remove(name)
}

func (h *hookFs) Mkdir(name string, perm os.FileMode) error {
	if err := h.hook("mkdir", name, ""); err != nil {
		return &os.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return h.Fs.Mkdir(name, perm)
}

func (h *hookFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if err := h.hook("open", name, ""); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := h.Fs.OpenFile(name, flag, perm)
	if err != nil || h.fileSync == nil || flag&(os.O_WRONLY|os.O_RDWR) == 0 || strings.HasPrefix(name, lockDir) {
		return f, err
	}
	return &hookFile{File: f, sync: h.fileSync}, nil
}

func (h *hookFs) Open(name string) (afero.File, error) { return h.OpenFile(name, os.O_RDONLY, 0) }

func (h *hookFs) openUnnamed(dir afero.File, perm os.FileMode) (afero.File, error) {
	u, ok := h.Fs.(unnamedFs)
	if !h.unnamed || !ok {
		return nil, errors.ErrUnsupported
	}
	if err := h.hook("open-unnamed", dir.Name(), ""); err != nil {
		return nil, &os.PathError{Op: "open", Path: dir.Name(), Err: err}
	}
	f, err := u.openUnnamed(dir, perm)
	if err != nil || h.fileSync == nil {
		return f, err
	}
	return &hookFile{File: f, sync: h.fileSync}, nil
}

func (h *hookFs) linkUnnamed(f, dir afero.File, name string) error {
	if hf, ok := f.(*hookFile); ok {
		f = hf.File
	}
	if err := h.hook("link", "", name); err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: err}
	}
	err := h.Fs.(unnamedFs).linkUnnamed(f, dir, name)
	if err == nil && h.after != nil {
		h.after("link", "", name)
	}
	return err
}

// hookFile replaces Sync.
type hookFile struct {
	afero.File
	sync func(name string, f afero.File) error
}

func (f *hookFile) Sync() error { return f.sync(f.Name(), f.File) }

// SyscallConn keeps the record attribute working.
func (f *hookFile) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := f.File.(interface {
		SyscallConn() (syscall.RawConn, error)
	}); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}
