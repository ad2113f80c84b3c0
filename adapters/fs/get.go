//go:build unix

package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"os"
	"syscall"

	"github.com/cellb/cellb/core/store"
)

// lockFreeReads is how many times Get reads without a lock before it
// queues behind the writers of the key. Each failed attempt needs a write
// that landed during the read, so the locked read is rare.
const lockFreeReads = 4

var errUnsettled = errors.New("the object kept changing while it was read (is another program rewriting it in place?)")

// Get implements store.Store. It takes no lock: objects are replaced by
// rename, never modified in place, so an open file is always a whole
// object, and its sidecar says which version it is.
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	const op = "get"
	if err := ctx.Err(); err != nil {
		return nil, opErr(op, key, err)
	}
	if err := checkKey(op, key); err != nil {
		return nil, err
	}
	if err := s.begin(op, key); err != nil {
		return nil, err
	}
	defer s.end()
	for range lockFreeReads {
		obj, settled, err := s.readOnce(op, key)
		if err != nil || settled {
			return obj, err
		}
		if err := ctx.Err(); err != nil {
			return nil, opErr(op, key, err)
		}
	}
	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return nil, opErr(op, key, err)
	}
	defer unlock()
	obj, settled, err := s.readOnce(op, key)
	if err == nil && !settled {
		err = opErr(op, key, errUnsettled)
	}
	return obj, err
}

// readOnce reads key once. settled is false when the object changed during
// the read, which must then be repeated.
func (s *Store) readOnce(op, key string) (obj *store.Object, settled bool, err error) {
	f, err := s.fsys.OpenFile(key, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isMissing(err) {
			return nil, true, store.NotFound(op, key)
		}
		return nil, true, classify(op, key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, true, opErr(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		// A directory (the parent of other keys), or something no
		// writer of this store makes: not an object.
		return nil, true, store.NotFound(op, key)
	}
	id, err := identityOf(fi)
	if err != nil {
		return nil, true, opErr(op, key, err)
	}
	data, err := readAll(f, fi.Size())
	if err != nil {
		return nil, true, opErr(op, key, err)
	}
	if int64(len(data)) != fi.Size() {
		return nil, false, nil // rewritten in place while we read
	}
	// The open file's own attribute settles it at once; else look
	// further (the sidecar, or a foreign file).
	rec := s.openRecord(f, key, id)
	if rec == nil {
		var settled bool
		rec, settled, err = s.resolve(key, id)
		if err != nil || !settled {
			return nil, settled, errOr(op, key, err)
		}
	}
	return &store.Object{
		Key:      key,
		Data:     data,
		Version:  rec.Version,
		Metadata: cloneMetadata(rec.Metadata),
		Headers:  rec.headers(),
		Modified: fi.ModTime(),
	}, true, nil
}

// resolve finds the record describing the file with identity id that was
// found at key: its record attribute's, else the sidecar's, or a foreign
// record when neither knows the file. settled is false when key no longer holds that file.
func (s *Store) resolve(key string, id identity) (rec *record, settled bool, err error) {
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

// classify turns a file-system error on key's path into a store error.
func classify(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ELOOP):
		return invalidKey(op, key, ErrSymlink)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY):
		return invalidKey(op, key, fmt.Errorf("%w: %w", ErrKeyConflict, err))
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EXDEV), errors.Is(err, errOutsideRoot):
		return invalidKey(op, key, err)
	}
	return opErr(op, key, err)
}

func errOr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return opErr(op, key, err)
}

func cloneMetadata(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	return maps.Clone(md)
}
