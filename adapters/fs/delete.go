//go:build unix

package fs

import (
	"context"
	"fmt"
	"os"

	"github.com/cellb/cellb/core/store"
)

// Delete implements store.Store. Deleting a missing key succeeds. After
// the object's file is gone, its sidecar is removed and then every parent
// directory left empty, up to the root.
func (s *Store) Delete(ctx context.Context, key string) error {
	const op = "delete"
	if err := ctx.Err(); err != nil {
		return opErr(op, key, err)
	}
	if err := checkKey(op, key); err != nil {
		return err
	}
	if err := s.begin(op, key); err != nil {
		return err
	}
	defer s.end()

	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return opErr(op, key, err)
	}
	if err := ctx.Err(); err != nil {
		unlock()
		return opErr(op, key, err)
	}
	err = s.deleteLocked(op, key)
	unlock()
	if err != nil {
		return err
	}
	s.prune(ctx, parentDir(key))
	return nil
}

func (s *Store) deleteLocked(op, key string) error {
	fi, err := s.fsys.Stat(key)
	if isMissing(err) {
		return errOr(op, key, s.removeSidecar(key))
	}
	if err != nil {
		return classify(op, key, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return invalidKey(op, key, ErrSymlink)
	}
	if !fi.Mode().IsRegular() {
		// No object here (a directory of other keys, or a file this store
		// would never write): nothing to delete but a stale sidecar.
		return errOr(op, key, s.removeSidecar(key))
	}
	if err := s.fsys.Remove(key); err != nil && !isMissing(err) {
		return opErr(op, key, err)
	}
	if err := s.syncDir(parentDir(key)); err != nil {
		return store.Ambiguous(op, key, fmt.Errorf("the object was removed but its directory could not be synced: %w", err))
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
func (s *Store) prune(ctx context.Context, dir string) {
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
