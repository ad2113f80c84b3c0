package fs

import (
	"context"

	"github.com/cellb/cellb/core/store"
)

// Scheme is the URL scheme of local-directory buckets: file:///path/to/dir.
// A store.URLMux with it registered also opens plain directory paths.
const Scheme = "file"

// URLOpener opens file:///path/to/dir URLs and plain directory paths with
// Open, which needs the directory to exist: a mistyped path fails with
// ErrNoRoot rather than growing a new, empty bucket. The URL takes no
// query parameters.
type URLOpener struct {
	// Options are given to Open (WithCreateRoot, WithLogger, ...).
	Options []Option
}

// Register adds the file scheme to m, opened by a zero URLOpener.
func Register(m *store.URLMux) { URLOpener{}.Register(m) }

// Register adds the file scheme to m, opened by o.
func (o URLOpener) Register(m *store.URLMux) {
	m.Register(store.URLScheme{Name: Scheme, Dir: true, Form: "file:///path/to/dir (or a plain path)", Opener: o})
}

// OpenBucketURL opens the URL's directory.
func (o URLOpener) OpenBucketURL(_ context.Context, u *store.BucketURL) (store.Store, error) {
	return Open(u.Dir, o.Options...)
}
