//go:build unix

package fs_test

import (
	"testing"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/conformance/leasetest"
)

// TestLeaseConformance runs the lease suite's fleet harness (celld's
// ownership protocol with its node log) on a local-files bucket, as a
// user runs it on their own bucket.
func TestLeaseConformance(t *testing.T) {
	b, err := fs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leasetest.Run(t, leasetest.NewFleetHarness(b, leasetest.FleetOptions{}))
}
