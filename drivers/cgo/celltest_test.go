//go:build cgo

package cgo_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/celltest"
	"github.com/cellb/cellb/drivers/cgo"
)

// TestCellSemantics runs the cell-semantics suite on this driver.
func TestCellSemantics(t *testing.T) {
	celltest.Run(t, celltest.Harness{Driver: cgo.New()})
}

// TestCellSuiteRejectsTwins shows the suite fails each deliberately broken
// variant (per-statement commits, early acknowledgement, ...) on this
// driver.
func TestCellSuiteRejectsTwins(t *testing.T) {
	celltest.RunTwins(t, celltest.Harness{Driver: cgo.New()})
}

// BenchmarkCells measures events through the cell runtime on this driver
// against a raw transaction measured in the same run.
func BenchmarkCells(b *testing.B) {
	celltest.Benchmark(b, celltest.Harness{Driver: cgo.New()})
}
