package gcs_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/r2test"
)

// TestR2Conformance runs the R2 binding's suite (core/r2 in celld's
// format) over this adapter, against the server of .ci/run.
func TestR2Conformance(t *testing.T) {
	r2test.Run(t, r2test.Harness{Store: openServer(t)})
}
