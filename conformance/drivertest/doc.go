// Package drivertest is the public conformance suite for CellB SQLite
// drivers (implementations of core/driver).
//
// Every claim a driver makes — through the Conn contract and through its
// declared Capabilities — is checked by a named case: SQL basics, the
// authorizer, exact images (Serialize/Restore), page capture under seeded
// random workloads, sessions and checkpoints. A driver module runs it from a
// test:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{Driver: mydriver.New()})
//	}
//
// and shows the suite has teeth by running the shipped negative twins
// (deliberately broken wrappers around the same driver), each of which the
// suite must reject in a named case:
//
//	func TestConformanceRejectsTwins(t *testing.T) {
//		drivertest.RunTwins(t, drivertest.Harness{Driver: mydriver.New()})
//	}
//
// Random workloads are seeded. A failure prints its seed; set the
// environment variable CELLB_DRIVERTEST_SEED (or Harness.Seed) to replay it
// exactly.
//
// The suite imports only core and the standard library, so it cannot hold a
// SQLite library of its own: the twins wrap the driver under test.
package drivertest
