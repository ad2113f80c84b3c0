//go:build unix

package fs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/cellb/cellb/core/store"
)

// Classify implements store.Driver. A local store learns every outcome
// itself, so its drivers' errors mostly carry their kind already
// (ErrNotFound, ErrPreconditionFailed, ErrAmbiguous); what is left to map
// is a path the file system refuses for the key, which no later write
// can fix until the other object or the link is gone.
func (s *driver) Classify(err error) store.ErrorClass {
	switch {
	case errors.Is(err, ErrSymlink), errors.Is(err, ErrKeyConflict),
		errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EXDEV), errors.Is(err, errOutsideRoot):
		return store.ErrorClass{Kind: store.KindInvalidKey}
	}
	return store.ErrorClass{}
}

// pathErr names what a file-system error met on a key's path says about
// the key: a symbolic link on the way (ErrSymlink), or a file where a
// directory must be, or the reverse (ErrKeyConflict).
func pathErr(err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%w: %w", ErrSymlink, err)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY):
		return fmt.Errorf("%w: %w", ErrKeyConflict, err)
	}
	return err
}

// notApplied reports the failure of a write that stopped before its
// rename, so nothing was applied. The Bucket calls a write's unclassified
// failure ambiguous (a remote store cannot know better), and has no kind
// for "failed here, for certain" that holds for conditional writes too
// (KindRejected leaves them ambiguous); it keeps an *store.OpError as it
// is, so the driver says it with one, carrying the portable kind Classify
// gives.
func (s *driver) notApplied(op, key string, err error) error {
	if s.Classify(err).Kind == store.KindInvalidKey && !errors.Is(err, store.ErrInvalidKey) {
		err = fmt.Errorf("%w: %w", store.ErrInvalidKey, err)
	}
	return &store.OpError{Op: op, Key: key, Err: err}
}
