//go:build unix

package fs_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/storetest/brokenstore"
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

// TestConformanceRejectsTwins: the suite has teeth on this store too. Its
// twins (each an fs store given one flaw) fail the cases that name them,
// after those cases pass on the store itself, as a user's own bucket would
// be checked.
func TestConformanceRejectsTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("reruns the cases each twin is caught by")
	}
	dir := t.TempDir()
	brokenstore.RunTwins(t, storetest.HarnessFunc(func(context.Context) (store.Store, error) {
		return fs.Open(dir)
	}), storetest.LargeObjectSize(4<<20))
}
