//go:build unix

package fs

import (
	"errors"
	"os"
	"syscall"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// attrName is the extended attribute that carries an object file's record
// (its key, version, metadata and the identity the file had when it was
// written), in one of two layouts (see encodeAttr). It lives in the
// inode, so the fsync that makes the body durable makes it durable too, and
// the rename that publishes the body publishes it with it: a Put needs no
// sidecar, and two fsyncs (the file, then its directory).
const attrName = "user.cellb.object"

// maxAttrSize bounds the record read back; ext4 keeps all of an inode's
// attributes in one block, so larger values are refused on write anyway.
const maxAttrSize = 64 << 10

// errNoAttr: the file has no record attribute, or cannot have one (the file
// system or the afero.File does not support extended attributes).
var errNoAttr = errors.New("no record attribute")

// rawConn reaches the descriptor of an afero.File that is an *os.File (the
// store's default file systems) or wraps one the same way.
func rawConn(f afero.File) (syscall.RawConn, bool) {
	sc, ok := f.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}

// setAttr stores val as f's record attribute. Any failure (no descriptor,
// ENOTSUP, a value too large for the file system) leaves f without one.
func setAttr(f afero.File, val []byte) error {
	rc, ok := rawConn(f)
	if !ok {
		return errNoAttr
	}
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		err = ignoringEINTR(func() error { return unix.Fsetxattr(int(fd), attrName, val, 0) })
	}); cerr != nil {
		return cerr
	}
	return err
}

// getAttr reads f's record attribute, or returns errNoAttr.
func getAttr(f afero.File) ([]byte, error) {
	rc, ok := rawConn(f)
	if !ok {
		return nil, errNoAttr
	}
	buf := make([]byte, 4<<10)
	var n int
	var err error
	for {
		if cerr := rc.Control(func(fd uintptr) {
			err = ignoringEINTR(func() error {
				var e error
				n, e = unix.Fgetxattr(int(fd), attrName, buf)
				return e
			})
		}); cerr != nil {
			return nil, cerr
		}
		if errors.Is(err, unix.ERANGE) && len(buf) < maxAttrSize {
			buf = make([]byte, maxAttrSize)
			continue
		}
		break
	}
	switch {
	case err == nil:
		return buf[:n], nil
	case errors.Is(err, errNoAttrData), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP):
		return nil, errNoAttr
	}
	return nil, err
}

// attrRecord returns the record the attribute of the file now at key
// gives, if it has one and it describes that file as it is (identity id:
// a program that rewrote the file in place changed its size or mtime, and
// the attribute no longer speaks for it). Otherwise it returns nil.
func (s *driver) attrRecord(key string, id identity) *record {
	f, err := s.fsys.OpenFile(key, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	return s.openRecord(f, key, id)
}

// openRecord is attrRecord on a file already open: the record its
// attribute gives, if it describes the file as it is (identity id).
func (s *driver) openRecord(f afero.File, key string, id identity) *record {
	raw, err := getAttr(f)
	if err != nil {
		if !errors.Is(err, errNoAttr) {
			s.log.Warn("fs store: cannot read a record attribute; treating the object as unrecorded", "root", s.root, "key", key, "err", err)
		}
		return nil
	}
	rec, err := decodeAttr(raw, key)
	if err != nil {
		s.log.Warn("fs store: ignoring a malformed record attribute", "root", s.root, "key", key, "err", err)
		return nil
	}
	if rec.File != id {
		return nil
	}
	return rec
}
