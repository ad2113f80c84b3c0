package gcs_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/adapters/gcs"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/core/store"
)

// TestConformance runs the public Store suite, in full (64 MiB object,
// contention), against the emulator of .ci/servers/fake-gcs.sh, with a new
// client for each store the suite asks for.
func TestConformance(t *testing.T) {
	opts := serverOptions(t)
	storetest.Run(t, storetest.HarnessFunc(func(ctx context.Context) (store.Store, error) {
		return gcs.New(ctx, opts)
	}))
}
