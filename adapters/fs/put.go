//go:build unix

package fs

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cellb/cellb/core/store"
)

// PutFrom implements store.Driver.
//
// A Put that may create its key (create-only or unconditional) in a
// directory that exists writes an unnamed file there, with the new record
// as its attribute, fsyncs it, and under the key's lock links it under
// the key (see unnamedFs); the key's directory is then fsynced. When the
// key is taken, the file is named in the temporary directory and the Put
// goes on as any other does, under the lock it holds:
//
// The body goes to a temporary file as it arrives, which gets the new
// record as its attribute and is fsynced before the key's lock is taken.
// Under the lock the condition is checked against the current file, the
// key's sidecar is replaced only if the attribute could not be set (naming
// the new file and keeping the current one's record), and the temporary
// file is renamed onto the key's path, whose directory is then fsynced.
//
// The link or rename is the moment the write takes effect: every failure
// before it (a body that fails or ends early included) leaves the object
// as it was and no file behind, and is definite (store.NotApplied); a
// failure after it (the directory fsync) is left to the Bucket to report
// as ambiguous.
func (s *driver) PutFrom(ctx context.Context, key string, r io.Reader, _ int64, opts store.PutOptions) (store.Version, error) {
	v, applied, err := s.put(ctx, key, r, opts)
	if err != nil && !applied {
		return "", store.NotApplied("", err)
	}
	return v, err
}

func (s *driver) put(ctx context.Context, key string, r io.Reader, opts store.PutOptions) (v store.Version, applied bool, err error) {
	if err := checkKey(key); err != nil {
		return "", false, err
	}
	cond := opts.Condition
	switch cond.Kind {
	case store.Unconditional, store.CreateOnly, store.MatchVersion:
	default:
		return "", false, fmt.Errorf("unknown condition kind %d", cond.Kind)
	}
	if err := s.begin(ctx); err != nil {
		return "", false, err
	}
	defer s.end()

	next := &record{Version: newVersion(), Metadata: cloneMetadata(opts.Metadata)}
	if !opts.Headers.IsZero() {
		h := opts.Headers
		next.Headers = &h
	}
	var attr func(identity) []byte
	if !s.sidecarsOnly {
		attr = func(id identity) []byte {
			rec := *next
			rec.File = id
			return encodeAttr(key, &rec)
		}
	}
	if attr != nil && cond.Kind != store.MatchVersion {
		if u := s.unnamed(); u != nil {
			v, applied, handled, err := s.putUnnamed(ctx, u, key, r, next, attr, cond)
			if handled {
				return v, applied, err
			}
		}
	}
	tmp, id, attred, err := s.writeTemp(r, attr)
	if err != nil {
		return "", false, err
	}
	return s.putNamed(ctx, key, tmp, id, attred, next, cond, false)
}

// putNamed publishes the temporary file tmp, whose identity is id, at key
// if cond holds, under key's lock (which the caller holds already when
// locked is set), and removes tmp if it does not.
func (s *driver) putNamed(ctx context.Context, key, tmp string, id identity, attred bool, next *record, cond store.Condition, locked bool) (v store.Version, applied bool, err error) {
	published := false
	defer func() {
		if !published {
			s.fsys.Remove(tmp)
		}
	}()

	if !locked {
		unlock, err := s.locks.lock(ctx, stripeOf(key))
		if err != nil {
			return "", false, err
		}
		defer unlock()
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}

	cur, err := s.current(key)
	if err != nil {
		return "", false, err
	}
	switch cond.Kind {
	case store.CreateOnly:
		if cur != nil {
			return "", false, store.ErrPreconditionFailed
		}
	case store.MatchVersion:
		if cur == nil || cur.Version != cond.Version {
			return "", false, store.ErrPreconditionFailed
		}
	}

	next.File = id
	if !attred {
		// No record attribute (the file system refused it, or
		// WithSidecarRecords): the sidecar must name the file first.
		if err := s.writeSidecar(key, &sidecar{Format: sidecarFormat, Key: key, Cur: next, Prev: cur}); err != nil {
			return "", false, pathErr(err)
		}
	}
	// Last chance to stop without effect: the sidecar alone changes
	// nothing a reader sees, because it still describes the current file.
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if err := s.publish(tmp, key); err != nil {
		return "", false, pathErr(err)
	}
	published = true
	if err := s.syncDir(parentDir(key)); err != nil {
		return "", true, fmt.Errorf("the object was replaced but its directory could not be synced: %w", err)
	}
	return next.Version, true, nil
}

// current returns the record of the object now at key, or nil when there
// is none. The caller holds the key's lock, so only another program could
// change the file while we look.
func (s *driver) current(key string) (*record, error) {
	for range maxRetries {
		fi, err := s.fsys.Stat(key)
		if isMissing(err) {
			return nil, nil
		}
		if err != nil {
			return nil, pathErr(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, ErrSymlink
		}
		if !fi.Mode().IsRegular() {
			return nil, nil // a directory or a special file: no object
		}
		id, err := identityOf(fi)
		if err != nil {
			return nil, err
		}
		rec, settled, err := s.resolve(key, id)
		if err != nil {
			return nil, err
		}
		if settled {
			return rec, nil
		}
	}
	return nil, errUnsettled
}
