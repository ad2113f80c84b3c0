package s3_test

import (
	"context"
	"testing"

	"github.com/cellb/cellb/adapters/s3"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/core/store"
)

// TestConformance runs the public Store suite, in full (64 MiB object,
// contention), against the S3 server of .ci/servers/versitygw.sh. Each
// call of the harness builds a new client, so the suite's second client
// has its own connections.
func TestConformance(t *testing.T) {
	opts := serverOptions(t)
	storetest.Run(t, storetest.HarnessFunc(func(ctx context.Context) (store.Store, error) {
		return s3.New(ctx, opts)
	}))
}
