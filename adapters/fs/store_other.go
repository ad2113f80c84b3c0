//go:build !unix

package fs

import (
	"context"
	"errors"

	"github.com/cellb/cellb/core/store"
)

// errPlatform: the store relies on flock(2) and Unix rename semantics.
var errPlatform = errors.New("fs: the local directory store needs a Unix system (flock, atomic rename over an existing file)")

// Store is unavailable on this platform; Open always fails.
type Store struct{}

// Open fails on this platform.
func Open(root string, opts ...Option) (*Store, error) { return nil, errPlatform }

func (*Store) Root() string { return "" }
func (*Store) Close() error { return nil }
func (*Store) Get(context.Context, string) (*store.Object, error) {
	return nil, errPlatform
}
func (*Store) Put(context.Context, string, []byte, store.PutOptions) (store.Version, error) {
	return "", errPlatform
}
func (*Store) Delete(context.Context, string) error { return errPlatform }
func (*Store) List(context.Context, store.ListOptions) (store.ListPage, error) {
	return store.ListPage{}, errPlatform
}
