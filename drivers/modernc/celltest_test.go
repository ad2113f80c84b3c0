package modernc_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/celltest"
	"github.com/cellb/cellb/conformance/suite"
	"github.com/cellb/cellb/drivers/modernc"
)

// TestCellSemantics runs the cell-semantics suite on this driver.
func TestCellSemantics(t *testing.T) {
	celltest.Run(t, celltest.Harness{Driver: modernc.New(modernc.Options{})})
}

// TestCellBucketCasesWithoutPageCapture runs the bucket-wins cases with
// page capture hidden: the changeset log and backups on the runtime's
// commit-time path, which only this driver (the one with sessions) reaches.
func TestCellBucketCasesWithoutPageCapture(t *testing.T) {
	celltest.Run(t, celltest.Harness{Driver: celltest.WithoutPageCapture(modernc.New(modernc.Options{}))}, suite.Only("bucket/", "output/log-commits"))
}

// TestCellSuiteRejectsTwins shows the suite fails each deliberately broken
// variant (per-statement commits, early acknowledgement, ...) on this
// driver.
func TestCellSuiteRejectsTwins(t *testing.T) {
	celltest.RunTwins(t, celltest.Harness{Driver: modernc.New(modernc.Options{})})
}

// BenchmarkCells measures events through the cell runtime on this driver
// against a raw transaction measured in the same run.
func BenchmarkCells(b *testing.B) {
	celltest.Benchmark(b, celltest.Harness{Driver: modernc.New(modernc.Options{})})
}
