package nodelog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// Bundle is one bundle of a session, listed.
type Bundle struct {
	layout.BundleFile
	Info store.ObjectInfo
}

// ListBundles lists a session's bundles in flush order (log epoch, then
// sequence, numerically). Keys under the prefix that are not bundle keys
// are skipped.
func ListBundles(ctx context.Context, s store.Store, node, generation string) ([]Bundle, error) {
	var out []Bundle
	var files []layout.BundleFile
	infos := map[string]store.ObjectInfo{}
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: layout.BundlePrefix(node, generation)}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if f, ok := layout.ParseBundleKey(o.Key); ok && f.Node == node && f.Generation == generation {
				files = append(files, f)
				infos[o.Key] = o
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	layout.SortBundles(files)
	for _, f := range files {
		out = append(out, Bundle{BundleFile: f, Info: infos[f.Key]})
	}
	return out, nil
}

// readBundle reads a whole bundle and its rows. A bundle deleted since it
// was listed gives store.ErrNotFound.
func readBundle(ctx context.Context, s store.Store, key string) ([]byte, []ltx.BundleRow, error) {
	obj, err := s.Get(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	rows, err := ltx.DecodeBundle(obj.Data)
	if err != nil {
		return nil, nil, withKey(err, key)
	}
	return obj.Data, rows, nil
}

// bundleReadAttempts is how many times a recovery reads a bundle over
// transient failures before it gives up.
const bundleReadAttempts = 4

// readBundleRetrying is readBundle tried again over transient failures (a
// failed or ambiguous read, a 5xx), waiting 25, 50 then 100 ms on clk: a
// recovery reads every bundle of a session, and one failed read among
// thousands must not fail it (and with it the start of a node that must
// recover its previous session first). A missing bundle, a corrupt one, a
// refused bucket and the end of ctx are not retried.
func readBundleRetrying(ctx context.Context, s store.Store, key string, clk clock.Clock) ([]byte, []ltx.BundleRow, error) {
	var err error
	for attempt := 0; attempt < bundleReadAttempts; attempt++ {
		if attempt > 0 {
			t := clk.NewTimer((25 * time.Millisecond) << (attempt - 1))
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			}
		}
		var data []byte
		var rows []ltx.BundleRow
		data, rows, err = readBundle(ctx, s, key)
		var be *ltx.BundleError
		switch {
		case err == nil:
			return data, rows, nil
		case store.IsNotFound(err), store.IsRefused(err), errors.As(err, &be), errors.Is(err, ltx.ErrCorruptBundle), ctx.Err() != nil:
			return nil, nil, err
		}
	}
	return nil, nil, err
}

// readFooter reads a bundle's rows without its payloads: its trailer, then
// its footer (two ranged reads).
func readFooter(ctx context.Context, s store.Store, key string, size int64) ([]ltx.BundleRow, error) {
	if size < ltx.BundleTrailerSize {
		return nil, withKey(&ltx.BundleError{Reason: fmt.Sprintf("%d bytes: shorter than its trailer", size)}, key)
	}
	trailer, err := readRange(ctx, s, key, size-ltx.BundleTrailerSize, ltx.BundleTrailerSize)
	if err != nil {
		return nil, err
	}
	n, err := ltx.BundleFooterLen(trailer, size)
	if err != nil {
		return nil, withKey(err, key)
	}
	if n == 0 {
		return nil, nil
	}
	footer, err := readRange(ctx, s, key, size-ltx.BundleTrailerSize-int64(n), int64(n))
	if err != nil {
		return nil, err
	}
	rows, err := ltx.DecodeBundleFooter(footer, size)
	return rows, withKey(err, key)
}

func readRange(ctx context.Context, s store.Store, key string, off, n int64) ([]byte, error) {
	r, err := store.NewRangeReader(ctx, s, key, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return b, nil
}

func withKey(err error, key string) error {
	var be *ltx.BundleError
	if errors.As(err, &be) && be.Key == "" {
		be.Key = key
	}
	return err
}
