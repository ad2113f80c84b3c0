//go:build unix

package fs

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"syscall"

	"github.com/spf13/afero"
)

// writeTemp copies body to a new file in tmpDir and makes it durable. It
// returns the file's name and identity; the caller renames or removes it.
// A failure, of body or of the file system, leaves no file.
//
// When attr is set, it is called with the file's identity once the body is
// written, and what it returns is stored as the file's record attribute
// before the fsync; attred reports whether the file system took it.
func (s *driver) writeTemp(body io.Reader, attr func(identity) []byte) (name string, id identity, attred bool, err error) {
	if err := s.ensureMeta(); err != nil {
		return "", identity{}, false, err
	}
	name = tmpDir + "/" + rand.Text() + ".tmp"
	f, err := s.fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, iofs.ErrNotExist) {
		// Someone removed the store's directories; make them again.
		s.resetMeta()
		if err = s.ensureMeta(); err == nil {
			f, err = s.fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		}
	}
	if err != nil {
		return "", identity{}, false, err
	}
	id, attred, err = s.writeSyncStat(f, body, attr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.fsys.Remove(name)
		return "", identity{}, false, err
	}
	return name, id, attred, nil
}

// copyBufSize is the size of the buffers bodies are copied through.
const copyBufSize = 32 << 10

func (s *driver) writeSyncStat(f afero.File, body io.Reader, attr func(identity) []byte) (identity, bool, error) {
	// The buffer comes from a pool: a Put of a small object would
	// otherwise allocate more for the copy than the object holds. The
	// file's ReadFrom is hidden because, for a reader that is not a file,
	// it would only allocate a buffer of its own.
	buf := s.bufs.Get().(*[copyBufSize]byte)
	_, err := io.CopyBuffer(struct{ io.Writer }{f}, body, buf[:])
	s.bufs.Put(buf)
	if err != nil {
		return identity{}, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		return identity{}, false, err
	}
	id, err := identityOf(fi)
	if err != nil {
		return identity{}, false, err
	}
	// Setting an attribute changes the inode's ctime, not its size or
	// mtime, so the identity stays the one recorded in it.
	attred := attr != nil && setAttr(f, attr(id)) == nil
	if err := f.Sync(); err != nil {
		return identity{}, false, err
	}
	return id, attred, nil
}

// syncDir makes the entries of dir durable (new, renamed and removed
// names) that were changed before it was called. Concurrent callers on
// one directory share fsyncs (see dirSyncs).
func (s *driver) syncDir(dir string) error {
	return s.dirSyncs.do(dir, func() error { return s.fsyncDir(dir) })
}

// fsyncDir opens dir and fsyncs it. If a concurrent Delete has pruned dir
// meanwhile, the nearest directory still there is synced instead: it holds
// the removal of the pruned one, and with it everything that was done
// inside.
func (s *driver) fsyncDir(dir string) error {
	for {
		f, err := s.fsys.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if errors.Is(err, iofs.ErrNotExist) && dir != "." {
			dir = parentDir(dir)
			continue
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

// maxRetries bounds the loops that race with other processes creating and
// pruning directories. Each retry needs a concurrent change to happen, so
// running out means the directory tree is changing without pause.
const maxRetries = 16

// mkdirs creates dir and its missing parents and makes each new entry
// durable. A parent that is a file fails with ENOTDIR.
func (s *driver) mkdirs(dir string) (created bool, err error) {
	if dir == "." {
		return false, nil
	}
	for range maxRetries {
		err := s.fsys.Mkdir(dir, 0o777)
		switch {
		case err == nil:
			return true, s.syncDir(parentDir(dir))
		case errors.Is(err, iofs.ErrExist):
			fi, err := s.fsys.Stat(dir)
			if errors.Is(err, iofs.ErrNotExist) {
				continue // pruned between our mkdir and stat
			}
			if err != nil {
				return false, err
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				return false, &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ELOOP}
			}
			if !fi.IsDir() {
				return false, &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
			}
			return false, nil
		case errors.Is(err, iofs.ErrNotExist):
			if _, err := s.mkdirs(parentDir(dir)); err != nil {
				return false, err
			}
		default:
			return false, err
		}
	}
	return false, fmt.Errorf("mkdir %s: the directory tree kept changing", dir)
}

var errTempGone = errors.New("temporary file disappeared before it was published (removed by a temp sweep?)")

// publish renames the temporary file tmp to dst, creating dst's parents as
// needed. A concurrent Delete may prune a parent between the two steps, so
// a vanished parent is created again. When dst is an empty directory (left
// by a crash or another program) it is removed first. It returns whether
// dst's parent had to be created.
func (s *driver) publish(tmp, dst string) error {
	for range maxRetries {
		err := s.fsys.Rename(tmp, dst)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.ENOENT):
			if _, serr := s.fsys.Stat(tmp); serr != nil {
				return errTempGone
			}
			if _, err := s.mkdirs(parentDir(dst)); err != nil {
				return err
			}
		case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
			// dst is a directory; only an empty one may give way.
			if rerr := s.fsys.Remove(dst); rerr != nil && !errors.Is(rerr, iofs.ErrNotExist) {
				return &os.PathError{Op: "rename", Path: dst, Err: syscall.EISDIR}
			}
		default:
			return err
		}
	}
	return fmt.Errorf("rename to %s: the directory tree kept changing", dst)
}

// readSidecar returns key's sidecar, or nil when there is none. An
// unreadable record is logged and treated as absent.
func (s *driver) readSidecar(key string) (*sidecar, error) {
	name := recordPath(key)
	f, err := s.fsys.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sidecars are small (metadata is at most 2 KiB), so one read
	// usually takes all of it, without a stat.
	data, err := readAll(f, 1024)
	if errors.Is(err, syscall.EISDIR) {
		s.log.Warn("fs store: ignoring sidecar record that is a directory", "root", s.root, "key", key, "path", name)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc, err := decodeSidecar(data, key)
	if err != nil {
		s.log.Warn("fs store: ignoring sidecar record", "root", s.root, "key", key, "path", name, "err", err)
		return nil, nil
	}
	return sc, nil
}

// writeSidecar makes sc durable as key's sidecar.
func (s *driver) writeSidecar(key string, sc *sidecar) error {
	data, err := encodeSidecar(sc)
	if err != nil {
		return err
	}
	tmp, _, _, err := s.writeTemp(bytes.NewReader(data), nil)
	if err != nil {
		return err
	}
	name := recordPath(key)
	if err := s.publish(tmp, name); err != nil {
		s.fsys.Remove(tmp)
		return err
	}
	return s.syncDir(parentDir(name))
}

// removeSidecar deletes key's sidecar if there is one.
func (s *driver) removeSidecar(key string) error {
	err := s.fsys.Remove(recordPath(key))
	if err == nil || errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	return err
}

// sweepTemps removes temporary files older than the expiry: what writers
// that crashed left behind. Younger files may belong to a live writer in
// another process and are left alone; readers never look at any of them.
func (s *driver) sweepTemps() {
	if s.tempExpiry <= 0 {
		return
	}
	f, err := s.fsys.Open(tmpDir)
	if err != nil {
		return // no temporary directory yet, or not readable
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return
	}
	cutoff := s.clock.Now().Add(-s.tempExpiry)
	removed := 0
	for _, n := range names {
		name := tmpDir + "/" + n
		fi, err := s.fsys.Stat(name)
		if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(cutoff) {
			continue
		}
		if err := s.fsys.Remove(name); err == nil {
			removed++
		}
	}
	if removed > 0 {
		s.log.Info("fs store: removed stale temporary files", "root", s.root, "count", removed, "older_than", s.tempExpiry)
	}
}
