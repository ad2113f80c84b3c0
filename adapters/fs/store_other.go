//go:build !unix

package fs

import (
	"errors"

	"github.com/cellb/cellb/core/store"
)

// errPlatform: the store relies on flock(2) and Unix rename semantics.
var errPlatform = errors.New("fs: the local directory store needs a Unix system (flock, atomic rename over an existing file)")

// Store is unavailable on this platform; Open always fails.
type Store struct{ *store.Bucket }

// Open fails on this platform.
func Open(root string, opts ...Option) (*Store, error) { return nil, errPlatform }

// Root is empty: no Store opens here.
func (*Store) Root() string { return "" }
