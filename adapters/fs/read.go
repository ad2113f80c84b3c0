//go:build unix

package fs

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"syscall"

	"github.com/cellb/cellb/core/store"
)

// lockFreeReads is how many times a read opens a key without a lock before
// it queues behind the writers of the key. Each failed attempt needs a
// write that landed during the read, so the locked read is rare.
const lockFreeReads = 4

var errUnsettled = errors.New("the object kept changing while it was read (is another program rewriting it in place?)")

// NewRangeReader implements store.Driver (Get reads through it too). It
// takes no lock: objects are replaced by rename, never modified in place,
// so the open file is one whole version of the object, and the reader
// keeps streaming the version it opened even if the object is replaced or
// deleted meanwhile. The record (attribute or sidecar) says which version
// it is. The Bucket checks the range and holds the body to its length.
func (s *driver) NewRangeReader(ctx context.Context, key string, offset, _ int64, _ bool) (*store.Reader, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	for range lockFreeReads {
		r, settled, err := s.openOnce(key, offset)
		if err != nil || settled {
			return r, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, settled, err := s.openOnce(key, offset)
	if err == nil && !settled {
		err = errUnsettled
	}
	return r, err
}

// openOnce opens key once. settled is false when the object changed
// while it was opened, which must then be repeated.
func (s *driver) openOnce(key string, offset int64) (r *store.Reader, settled bool, err error) {
	f, err := s.fsys.OpenFile(key, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isMissing(err) {
			return nil, true, store.ErrNotFound
		}
		return nil, true, pathErr(err)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, true, err
	}
	if !fi.Mode().IsRegular() {
		// A directory (the parent of other keys), or something no
		// writer of this store makes: not an object.
		return nil, true, store.ErrNotFound
	}
	id, err := identityOf(fi)
	if err != nil {
		return nil, true, err
	}
	// The open file's own attribute settles it at once; else look
	// further (the sidecar, or a foreign file).
	rec := s.openRecord(f, key, id)
	if rec == nil {
		rec, settled, err = s.resolve(key, id)
		if err != nil || !settled {
			return nil, settled, err
		}
	}
	if offset > 0 && offset <= fi.Size() {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return nil, true, err
		}
	}
	keep = true
	return &store.Reader{
		Version: rec.Version, Size: fi.Size(), Metadata: cloneMetadata(rec.Metadata), Headers: rec.headers(), Modified: fi.ModTime(),
		Body: f,
	}, true, nil
}

// resolve finds the record describing the file with identity id that was
// found at key: its record attribute's, else the sidecar's, or a foreign
// record when neither knows the file. settled is false when key no longer holds that file.
func (s *driver) resolve(key string, id identity) (rec *record, settled bool, err error) {
	if rec := s.attrRecord(key, id); rec != nil {
		return rec, true, nil
	}
	sc, err := s.readSidecar(key)
	if err != nil {
		return nil, false, err
	}
	if rec := sc.match(id); rec != nil {
		return rec, true, nil
	}
	// No record: either the file is foreign, or writers replaced it (and
	// its record) since we found it. Only the first keeps it in place.
	fi, err := s.fsys.Stat(key)
	if isMissing(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	now, err := identityOf(fi)
	if err != nil || now != id || !fi.Mode().IsRegular() {
		return nil, false, err
	}
	return &record{Version: foreignVersion(id), File: id}, true, nil
}

// isMissing reports errors that mean "no object at this path": the name or
// one of its parents does not exist, or a parent is a file.
func isMissing(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func cloneMetadata(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	return maps.Clone(md)
}
