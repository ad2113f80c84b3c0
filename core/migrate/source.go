package migrate

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// Open opens what `cellb import` is given: a Litestream replica — a bucket
// URL (anything with "://", opened by open) or a directory holding
// ltx/ (opened by open as a files bucket) — restored with
// RestoreLitestream into a temporary file in tmpDir; anything else is a
// SQLite database file (OpenDatabase).
func Open(ctx context.Context, src, tmpDir string, open func(ctx context.Context, url string) (store.Store, error)) (*Image, error) {
	replica := strings.Contains(src, "://")
	if !replica {
		if st, err := os.Stat(filepath.Join(src, strings.TrimSuffix(layout.LitestreamLTXPrefix, "/"))); err == nil && st.IsDir() {
			replica = true
		} else if st, err := os.Stat(src); err == nil && st.IsDir() {
			return nil, &NotDatabaseError{Path: src, Reason: "a directory without " + layout.LitestreamLTXPrefix + " (a Litestream replica's)"}
		}
	}
	if !replica {
		return OpenDatabase(src)
	}
	s, err := open(ctx, src)
	if err != nil {
		return nil, err
	}
	defer store.Close(s)
	return RestoreLitestream(ctx, s, tmpDir)
}
