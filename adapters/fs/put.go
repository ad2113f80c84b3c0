//go:build unix

package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cellb/cellb/core/store"
)

// Put implements store.Store.
//
// The body goes to a temporary file, which gets the new record as its
// attribute and is fsynced before the key's lock is taken. Under the lock
// the condition is checked against the current file, the key's sidecar is
// replaced only if the attribute could not be set (naming the new file and
// keeping the current one's record), and the temporary file is renamed onto
// the key's path, whose directory is then fsynced. The rename is the moment the write
// takes effect: every failure before it leaves the object as it was, and a
// failure after it (the directory fsync) is reported as ambiguous.
func (s *Store) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return s.PutFrom(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

// PutFrom implements store.Streamer: Put with the body copied from r into
// the temporary file as it arrives. A body that fails, or a context that
// ends, before the body is complete leaves the temporary file unpublished
// (and removed), so the object stays as it was.
func (s *Store) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	const op = "put"
	if err := ctx.Err(); err != nil {
		return "", opErr(op, key, err)
	}
	if err := checkKey(op, key); err != nil {
		return "", err
	}
	if err := store.ValidatePutOptions(opts); err != nil {
		return "", opErr(op, key, err)
	}
	cond := opts.Condition
	switch cond.Kind {
	case store.Unconditional, store.CreateOnly, store.MatchVersion:
	default:
		return "", opErr(op, key, fmt.Errorf("unknown condition kind %d", cond.Kind))
	}
	if err := s.begin(op, key); err != nil {
		return "", err
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
			b, _ := encodeSidecar(&sidecar{Format: sidecarFormat, Key: key, Cur: &rec})
			return b
		}
	}
	tmp, id, attred, err := s.writeTemp(store.Body(ctx, r, size), attr)
	var berr errBody
	if errors.As(err, &berr) {
		return "", store.BodyError(op, key, berr.err)
	}
	if err != nil {
		return "", opErr(op, key, err)
	}
	published := false
	defer func() {
		if !published {
			s.fsys.Remove(tmp)
		}
	}()

	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return "", opErr(op, key, err)
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return "", opErr(op, key, err)
	}

	cur, err := s.current(op, key)
	if err != nil {
		return "", err
	}
	switch cond.Kind {
	case store.CreateOnly:
		if cur != nil {
			return "", store.PreconditionFailed(op, key)
		}
	case store.MatchVersion:
		if cur == nil || cur.Version != cond.Version {
			return "", store.PreconditionFailed(op, key)
		}
	}

	next.File = id
	if !attred {
		// No record attribute (the file system refused it, or
		// WithSidecarRecords): the sidecar must name the file first.
		if err := s.writeSidecar(key, &sidecar{Format: sidecarFormat, Key: key, Cur: next, Prev: cur}); err != nil {
			return "", classify(op, key, err)
		}
	}
	// Last chance to stop without effect: the sidecar alone changes
	// nothing a reader sees, because it still describes the current file.
	if err := ctx.Err(); err != nil {
		return "", opErr(op, key, err)
	}
	if err := s.publish(tmp, key); err != nil {
		return "", classify(op, key, err)
	}
	published = true
	if err := s.syncDir(parentDir(key)); err != nil {
		return "", store.Ambiguous(op, key, fmt.Errorf("the object was replaced but its directory could not be synced: %w", err))
	}
	return next.Version, nil
}

// current returns the record of the object now at key, or nil when there
// is none. The caller holds the key's lock, so only another program could
// change the file while we look.
func (s *Store) current(op, key string) (*record, error) {
	for range maxRetries {
		fi, err := s.fsys.Stat(key)
		if isMissing(err) {
			return nil, nil
		}
		if err != nil {
			return nil, classify(op, key, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, invalidKey(op, key, ErrSymlink)
		}
		if !fi.Mode().IsRegular() {
			return nil, nil // a directory or a special file: no object
		}
		id, err := identityOf(fi)
		if err != nil {
			return nil, opErr(op, key, err)
		}
		rec, settled, err := s.resolve(key, id)
		if err != nil {
			return nil, opErr(op, key, err)
		}
		if settled {
			return rec, nil
		}
	}
	return nil, opErr(op, key, errUnsettled)
}
