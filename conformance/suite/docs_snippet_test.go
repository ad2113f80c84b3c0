package suite_test

// The functions between the markers are docs/conformance.md's "One shape"
// snippet, verbatim (TestConformanceDocSnippet): compiling this file
// compiles the snippet, and TestDocSnippetReport runs its report.

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cellb/cellb/conformance/celltest"
	"github.com/cellb/cellb/conformance/drivertest"
	"github.com/cellb/cellb/conformance/leasetest"
	"github.com/cellb/cellb/conformance/r2test"
	"github.com/cellb/cellb/conformance/storetest"
	"github.com/cellb/cellb/conformance/storetest/brokenstore"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/store"
)

var (
	_ = checkBucket
	_ = checkDriver
)

// doc:shape begin
// checkBucket runs the bucket suites on your adapter: the store suite and
// its twins, the R2 binding over it, and celld's ownership on it.
func checkBucket(t *testing.T, open func(ctx context.Context) (store.Store, error), bucket store.Store) {
	stores := storetest.HarnessFunc(open)
	storetest.Run(t, stores, suite.Quick())
	brokenstore.RunTwins(t, stores)

	r2test.Run(t, r2test.Harness{Store: bucket})
	r2test.RunTwins(t, r2test.Harness{Store: bucket})

	leases := leasetest.NewFleetHarness(bucket, leasetest.FleetOptions{TTL: 3 * time.Second})
	defer leases.Close()
	leasetest.Run(t, leases)
	leasetest.RunTwins(t, leases)
}

// checkDriver runs the driver suite and the runtime's on your SQLite
// driver, each with its twins.
func checkDriver(t *testing.T, d driver.Driver) {
	drivertest.Run(t, drivertest.Harness{Driver: d})
	drivertest.RunTwins(t, drivertest.Harness{Driver: d})
	celltest.Run(t, celltest.Harness{Driver: d}, suite.Skip("bucket/"))
	celltest.RunTwins(t, celltest.Harness{Driver: d})
}

// report checks two R2 cases without a *testing.T and writes the report.
func report(ctx context.Context, w io.Writer, bucket store.Store) error {
	rep, err := r2test.RunReport(ctx, r2test.Harness{Store: bucket}, suite.Only("put-get", "list"))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, rep.Summary()) // r2test: 2 passed, 0 failed, 15 skipped
	_, err = w.Write(rep.JSON())
	return err
}

// doc:shape end
