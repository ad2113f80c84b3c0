//go:build unix

package fs_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/core/store"
)

// TestConformance runs the public Store suite with two independent Stores
// (their own descriptors and lock files) on one directory, as two
// processes would have.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, storetest.HarnessFunc(func(context.Context) (store.Store, error) {
		return fs.Open(dir)
	}))
}
