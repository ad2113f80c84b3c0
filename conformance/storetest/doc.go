// Package storetest is the public conformance suite for store.Store
// implementations: every promise CellB's protocols rely on (create-only and
// compare-and-swap conditions, read- and list-after-write consistency,
// byte-order paginated listings, metadata, large objects, key validation,
// cancellation, and exactly-one-winner behaviour under contention) is one
// named case.
//
// From a Go test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.HarnessFunc(func(ctx context.Context) (store.Store, error) {
//			return mystore.Open(ctx, bucket)
//		}))
//	}
//
// Without a *testing.T (as `cellb diagnose` does against a live bucket):
//
//	report, err := storetest.RunReport(ctx, harness, suite.Progress(logf))
//
// Run, RunReport and the options are every suite's (package
// conformance/suite); the twins that show the suite has teeth are
// brokenstore.Twins, run on any harness with brokenstore.RunTwins.
//
// The suite writes only under a fresh prefix (storetest/<run id>/) and
// deletes what it writes, so a shared bucket can be used.
package storetest
