package app

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

// bucketMux opens the bucket URLs of the adapters cellb ships:
// file:///dir (or a plain path), s3://, gs://, az:// and azblob://, and
// those that more register (Options.Buckets). Each adapter parses its own
// query parameters (docs/adapters.md, "Bucket URLs").
func bucketMux(more ...func(*store.URLMux)) *store.URLMux {
	return store.NewURLMux(append([]func(*store.URLMux){fsstore.Register, s3.Register, gcs.Register, azure.Register}, more...)...)
}

// orDefault is mux, or when nil the mux of the adapters cellb ships.
func orDefault(mux *store.URLMux) *store.URLMux {
	if mux == nil {
		return bucketMux()
	}
	return mux
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
