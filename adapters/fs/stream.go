//go:build unix

package fs

import (
	"context"
	"io"
	"os"
	"syscall"

	"github.com/cellb/cellb/core/store"
)

var _ store.Streamer = (*Store)(nil)

// NewRangeReader implements store.Streamer. Like Get it takes no lock:
// the open file is one whole version of the object (writers replace files
// by rename), so the reader keeps streaming the version it opened even if
// the object is replaced or deleted meanwhile.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
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
		r, settled, err := s.openOnce(op, key, offset, length)
		if err != nil || settled {
			return r, err
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
	r, settled, err := s.openOnce(op, key, offset, length)
	if err == nil && !settled {
		err = opErr(op, key, errUnsettled)
	}
	return r, err
}

func (s *Store) openOnce(op, key string, offset, length int64) (r *store.Reader, settled bool, err error) {
	f, err := s.fsys.OpenFile(key, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isMissing(err) {
			return nil, true, store.NotFound(op, key)
		}
		return nil, true, classify(op, key, err)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, true, opErr(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, true, store.NotFound(op, key)
	}
	id, err := identityOf(fi)
	if err != nil {
		return nil, true, opErr(op, key, err)
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
	n, err := store.CheckRange(op, key, offset, length, fi.Size())
	if err != nil {
		return nil, true, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, true, opErr(op, key, err)
	}
	keep = true
	return &store.Reader{
		Key: key, Version: rec.Version, Size: fi.Size(), Metadata: cloneMetadata(rec.Metadata), Headers: rec.headers(), Modified: fi.ModTime(),
		Offset: offset, Length: n,
		Body: struct {
			io.Reader
			io.Closer
		}{io.LimitReader(f, n), f},
	}, true, nil
}
