//go:build unix

package fs

import (
	"context"
	"fmt"
	"os"

	"github.com/cellb/cellb/core/store"
)

// Delete implements store.Driver. Deleting a missing key succeeds. After
// the object's file is gone, its sidecar is removed and then every parent
// directory left empty, up to the root. A failure before the unlink
// changes nothing; one after it (the directory fsync) is ambiguous.
func (s *driver) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()

	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		unlock()
		return err
	}
	err = s.deleteLocked(key)
	unlock()
	if err != nil {
		return err
	}
	s.prune(ctx, parentDir(key))
	return nil
}

func (s *driver) deleteLocked(key string) error {
	fi, err := s.fsys.Stat(key)
	if isMissing(err) {
		return s.removeSidecar(key)
	}
	if err != nil {
		return pathErr(err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return ErrSymlink
	}
	if !fi.Mode().IsRegular() {
		// No object here (a directory of other keys, or a file this store
		// would never write): nothing to delete but a stale sidecar.
		return s.removeSidecar(key)
	}
	if err := s.fsys.Remove(key); err != nil && !isMissing(err) {
		return err
	}
	if err := s.syncDir(parentDir(key)); err != nil {
		return store.Ambiguous("delete", key, fmt.Errorf("the object was removed but its directory could not be synced: %w", err))
	}
	// The object is gone; a sidecar left behind by a failure here is
	// harmless (it matches no file), so it is only logged.
	if err := s.removeSidecar(key); err != nil {
		s.log.Warn("fs store: could not remove sidecar of deleted object", "root", s.root, "key", key, "err", err)
	}
	return nil
}

// prune removes dir and its ancestors while they are empty. Each directory
// is removed under the lock of the key with the same name: that key's
// writers are the only ones who could turn the name into a file, so the
// name cannot become an object between the check and the removal. A Put
// racing to create a file inside a pruned directory simply creates the
// directory again (see publish).
func (s *driver) prune(ctx context.Context, dir string) {
	for dir != "." {
		unlock, err := s.locks.lock(ctx, stripeOf(dir))
		if err != nil {
			return
		}
		fi, err := s.fsys.Stat(dir)
		removed := err == nil && fi.IsDir() && s.fsys.Remove(dir) == nil
		unlock()
		if !removed {
			return // not empty, already gone, or not ours to remove
		}
		dir = parentDir(dir)
	}
}
