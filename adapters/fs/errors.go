package fs

import (
	"errors"
	iofs "io/fs"
)

var (
	// ErrKeyConflict: the key cannot be laid out as a path because of what is
	// already in the directory — "a/b" while "a" is an object, or "a" while
	// objects exist below "a/". Object stores allow both; a file system
	// cannot hold a file and a directory under one name. Errors carrying it
	// also match store.ErrInvalidKey, because for this bucket the key is
	// unusable until the other object is deleted.
	ErrKeyConflict = errors.New("key conflicts with an existing object's path (a file and a directory cannot share a name)")

	// ErrSymlink: the key's path passes through a symbolic link. The store
	// never follows links (see the package documentation); errors carrying
	// it also match store.ErrInvalidKey.
	ErrSymlink = errors.New("path passes through a symbolic link, which the fs store does not follow")

	// ErrInvalidToken: a List continuation token this store did not make.
	ErrInvalidToken = errors.New("malformed continuation token")

	// ErrClosed: the Store was used after Close.
	ErrClosed = errors.New("store is closed")

	// ErrNoRoot: Open was given a directory that does not exist (and no
	// WithCreateRoot). It also matches io/fs.ErrNotExist.
	ErrNoRoot error = noRoot{}
)

// noRoot is ErrNoRoot's type, so that it matches io/fs.ErrNotExist too.
type noRoot struct{}

func (noRoot) Error() string { return "the bucket directory does not exist" }

func (noRoot) Is(target error) bool { return target == iofs.ErrNotExist }

// errOutsideRoot rejects names that are not clean relative paths. The store
// never builds such a name; the check guards the file-system seam itself.
var errOutsideRoot = errors.New("path is not a clean relative path below the root")
