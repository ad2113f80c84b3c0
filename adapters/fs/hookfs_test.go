//go:build unix

package fs

import (
	"os"
	"strings"
	"sync"

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

// hookFile replaces Sync.
type hookFile struct {
	afero.File
	sync func(name string, f afero.File) error
}

func (f *hookFile) Sync() error { return f.sync(f.Name(), f.File) }
