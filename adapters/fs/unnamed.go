//go:build unix

package fs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"syscall"

	"github.com/cellb/cellb/core/store"
	"github.com/spf13/afero"
)

// unnamedFs is a file system that can create a file without a name in a
// directory and name it later (Linux: O_TMPFILE and linkat(2)). The
// default file system on Linux is one.
//
// Why: a Put of a new key then costs what the least careful-enough
// program pays for a durable new file, or less. The file is written,
// given its record and fsynced while nameless, in the key's own directory;
// linking it under the key publishes it whole, and refuses (EEXIST) if the
// name is taken, so no temporary name is ever made, listed or swept, and
// only the key's directory changes. A Put that replaces an object still
// needs rename(2), so it names the file in the temporary directory and
// goes on as before.
type unnamedFs interface {
	// openUnnamed creates a file with no name in dir, an open directory
	// of this file system, open for writing.
	openUnnamed(dir afero.File, perm os.FileMode) (afero.File, error)
	// linkUnnamed names f, made by openUnnamed, path.Base(name) in the
	// open directory dir, whose path is path.Dir(name). It fails with
	// EEXIST when the name is taken.
	linkUnnamed(f, dir afero.File, name string) error
}

// unnamed returns the file system's unnamedFs if it has one that works
// here. The first call tries it once in the temporary directory (a
// kernel or file system without O_TMPFILE, or no /proc, fails); Puts
// otherwise write under temporary names, as they always could.
func (s *driver) unnamed() unnamedFs {
	s.unnamedOnce.Do(func() {
		u, ok := s.fsys.(unnamedFs)
		if !ok {
			return
		}
		if err := s.probeUnnamed(u); err != nil {
			s.log.Info("fs store: new objects are written under temporary names (unnamed files are unavailable)", "root", s.root, "err", err)
			return
		}
		s.unnamedFs = u
	})
	return s.unnamedFs
}

func (s *driver) probeUnnamed(u unnamedFs) error {
	if err := s.ensureMeta(); err != nil {
		return err
	}
	td, err := s.fsys.OpenFile(tmpDir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer td.Close()
	f, err := u.openUnnamed(td, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	// A probe left by a crash is swept like any temporary file.
	name := tmpDir + "/" + rand.Text() + ".tmp"
	if err := u.linkUnnamed(f, td, name); err != nil {
		return err
	}
	return s.fsys.Remove(name)
}

// putUnnamed writes a Put that creates key (CreateOnly, or Unconditional)
// through an unnamed file in key's directory. handled is false when it did
// nothing and read no byte of body: key's directory does not exist yet, or
// no unnamed file can be made there; the caller then writes under a
// temporary name. When the name is taken (an object, or an empty directory,
// is at key) or the directory went away after it was opened, the file is
// named in the temporary directory and putNamed goes on under the lock
// already held, so the condition is settled exactly as there.
func (s *driver) putUnnamed(ctx context.Context, u unnamedFs, key string, body io.Reader, next *record, attr func(identity) []byte, cond store.Condition) (v store.Version, applied, handled bool, err error) {
	dir := parentDir(key)
	df, err := s.fsys.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", false, false, nil // no such directory (yet), or not one
	}
	defer df.Close()
	f, err := u.openUnnamed(df, 0o666)
	if err != nil {
		return "", false, false, nil
	}
	defer f.Close()
	id, attred, err := s.writeSyncStat(f, body, attr)
	if err != nil {
		return "", false, true, err
	}
	next.File = id

	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return "", false, true, err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return "", false, true, err
	}
	if attred {
		// The record is in the file: naming it publishes the object.
		err := u.linkUnnamed(f, df, key)
		if err == nil {
			if err := s.dirSyncs.do(dir, df.Sync); err != nil {
				return "", true, true, fmt.Errorf("the object was created but its directory could not be synced: %w", err)
			}
			return next.Version, true, true, nil
		}
		if !errors.Is(err, iofs.ErrExist) && !isMissing(err) {
			return "", false, true, err
		}
	}
	tmp, err := s.nameUnnamed(u, f)
	if err != nil {
		return "", false, true, err
	}
	v, applied, err = s.putNamed(ctx, key, tmp, id, attred, next, cond, true)
	return v, applied, true, err
}

// nameUnnamed links the unnamed file f into the temporary directory and
// returns its name there.
func (s *driver) nameUnnamed(u unnamedFs, f afero.File) (string, error) {
	for range 2 {
		if err := s.ensureMeta(); err != nil {
			return "", err
		}
		td, err := s.fsys.OpenFile(tmpDir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if errors.Is(err, iofs.ErrNotExist) {
			s.resetMeta() // someone removed the store's directories
			continue
		}
		if err != nil {
			return "", err
		}
		name := tmpDir + "/" + rand.Text() + ".tmp"
		err = u.linkUnnamed(f, td, name)
		td.Close()
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("the temporary directory %s keeps disappearing", tmpDir)
}
