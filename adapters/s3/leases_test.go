package s3_test

import (
	"testing"
	"time"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/conformance/leasetest"
	"github.com/cellb/cellb/core/store"
)

// TestLeaseConformance runs the lease suite's fleet harness (celld's
// ownership protocol with its node log) on the S3 server, under a fresh
// prefix, with a TTL that leaves room for its request times.
func TestLeaseConformance(t *testing.T) {
	opts := serverOptions(t)
	raw, err := s3.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.WithPrefix(raw, "leases-"+randomHex(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(t, b) })
	leasetest.Run(t, leasetest.NewFleetHarness(b, leasetest.FleetOptions{TTL: 2 * time.Second}))
}
