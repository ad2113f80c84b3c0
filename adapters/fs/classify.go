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
