//go:build unix && !linux

package fs

import "github.com/spf13/afero"

// osFs is the default file system outside Linux: rootFs.
func osFs(root string) (afero.Fs, func() error, error) { return newRootFs(root) }
