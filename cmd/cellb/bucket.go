package main

import (
	"context"
	"fmt"
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
// terminal, and a missing files directory is *fsstore.MissingDirError.
func openBucket(ctx context.Context, mux *store.URLMux, rawURL string) (store.Store, error) {
	s, err := fsstore.OpenURL(ctx, mux, rawURL)
	if err != nil {
		return nil, oneLine(err)
	}
	return s, nil
}

// oneLine keeps only the first line of an error, for messages on a
// terminal.
func oneLine(err error) error {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return fmt.Errorf("%s", msg[:i])
	}
	return err
}
