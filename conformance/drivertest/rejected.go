package drivertest

import (
	"testing"

	"github.com/cellb/cellb/conformance/suite"
)

// RunTwins shows the suite rejects every applicable negative twin of the
// harness's driver (suite.RunTwins): first the driver itself must pass
// each case a twin is caught by (otherwise a rejection would prove
// nothing), then each twin must fail every case its Twin entry names. It
// runs as subtests "twin/<name>", all with the harness's one seed.
func RunTwins(t *testing.T, h Harness, opts ...suite.Option) {
	t.Helper()
	h, err := h.resolved()
	if err != nil {
		t.Fatal(err)
	}
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	t.Logf("drivertest %s twins: seed %d (replay with %s=%d)", h.Driver.Name(), h.Seed, SeedEnv, h.Seed)
	suite.RunTwins(t, h, Twins(), RunReport, opts...)
}

// ExpectRejected runs the named cases on h's driver (usually a broken one)
// and fails t unless every one of them fails, logging why each did
// (suite.ExpectRejected).
func ExpectRejected(t *testing.T, h Harness, cases ...string) {
	t.Helper()
	h, err := h.resolved()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drivertest %s: seed %d (replay with %s=%d)", h.Driver.Name(), h.Seed, SeedEnv, h.Seed)
	suite.ExpectRejected(t, h, RunReport, cases...)
}
