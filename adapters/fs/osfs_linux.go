//go:build linux

package fs

import (
	"errors"

	"github.com/spf13/afero"
)

// osFs is the default file system: dirFs, or rootFs on kernels without
// openat2.
func osFs(root string) (afero.Fs, func() error, error) {
	d, err := newDirFs(root)
	if errors.Is(err, errors.ErrUnsupported) {
		return newRootFs(root)
	}
	if err != nil {
		return nil, nil, err
	}
	return d, d.Close, nil
}
