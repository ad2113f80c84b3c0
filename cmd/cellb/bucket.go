package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cellb/cellb/adapters/azure"
	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/core/store"
)

// bucketMux opens the bucket URLs of the adapters this binary ships:
// file:///dir (or a plain path), s3://, gs://, az:// and azblob://. Each
// adapter parses its own query parameters (docs/adapters.md, "Bucket
// URLs").
func bucketMux() *store.URLMux {
	return store.NewURLMux(fsstore.Register, s3.Register, gcs.Register, azure.Register)
}

// openBucket opens rawURL through mux; every error is one line, for a
// terminal.
func openBucket(ctx context.Context, mux *store.URLMux, rawURL string) (store.Store, error) {
	s, err := mux.Open(ctx, rawURL)
	if errors.Is(err, fsstore.ErrNoRoot) {
		dir := rawURL
		if u, perr := mux.Parse(rawURL); perr == nil && u.Dir != "" {
			dir = u.Dir
		}
		return nil, &MissingBucketDirError{Dir: dir, Err: err}
	}
	if err != nil {
		return nil, oneLine(err)
	}
	return s, nil
}

// MissingBucketDirError: a local-files bucket (file:///dir or a plain path)
// whose directory does not exist. The files bucket never creates its
// directory, so that a mistyped path is not silently a new, empty bucket.
type MissingBucketDirError struct {
	Dir string
	Err error // matches fsstore.ErrNoRoot and io/fs.ErrNotExist
}

func (e *MissingBucketDirError) Error() string {
	return fmt.Sprintf("bucket directory %s does not exist; create it first (mkdir -p %s) if the path is right", e.Dir, e.Dir)
}

func (e *MissingBucketDirError) Unwrap() error { return e.Err }

// oneLine keeps only the first line of an error, for messages on a
// terminal.
func oneLine(err error) error {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return fmt.Errorf("%s", msg[:i])
	}
	return err
}

// freshFilesDir returns the directory of a files bucket that has no
// fsstore.MetaDir yet (the store makes it on its first write), or "" for
// any other bucket.
func freshFilesDir(mux *store.URLMux, rawURL string) string {
	u, err := mux.Parse(rawURL)
	if err != nil || u.Dir == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(u.Dir, fsstore.MetaDir)); !errors.Is(err, iofs.ErrNotExist) {
		return ""
	}
	return u.Dir
}
