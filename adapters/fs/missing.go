package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/cellb/cellb/core/store"
)

// MissingDirError: a files bucket URL (file:///dir or a plain path) whose
// directory does not exist. The files bucket never creates its directory,
// so that a mistyped path is not silently a new, empty bucket; the message
// says how to create it, for a terminal.
type MissingDirError struct {
	Dir string
	Err error // matches ErrNoRoot and io/fs.ErrNotExist
}

func (e *MissingDirError) Error() string {
	return fmt.Sprintf("bucket directory %s does not exist; create it first (mkdir -p %s) if the path is right", e.Dir, e.Dir)
}

func (e *MissingDirError) Unwrap() error { return e.Err }

// OpenURL opens rawURL through m (m.Open), but a files bucket whose
// directory does not exist fails with *MissingDirError.
func OpenURL(ctx context.Context, m *store.URLMux, rawURL string) (store.Store, error) {
	s, err := m.Open(ctx, rawURL)
	if errors.Is(err, ErrNoRoot) {
		dir := rawURL
		if u, perr := m.Parse(rawURL); perr == nil && u.Dir != "" {
			dir = u.Dir
		}
		return nil, &MissingDirError{Dir: dir, Err: err}
	}
	return s, err
}

// FreshDir returns the directory of a files bucket URL whose directory has
// no MetaDir yet (the store makes it on its first write; RemoveUnusedMeta
// removes it again), or "" for any other bucket URL.
func FreshDir(m *store.URLMux, rawURL string) string {
	u, err := m.Parse(rawURL)
	if err != nil || u.Dir == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(u.Dir, MetaDir)); !errors.Is(err, iofs.ErrNotExist) {
		return ""
	}
	return u.Dir
}
