package wasm_test

import (
	"testing"

	"github.com/cellb/cellb/conformance/celltest"
	"github.com/cellb/cellb/drivers/wasm"
)

// TestCellSemantics runs the cell-semantics suite on this driver.
func TestCellSemantics(t *testing.T) {
	celltest.Run(t, celltest.Harness{Driver: wasm.New()})
}

// TestCellSemanticsWALExclusive runs the suite on WAL mode with exclusive
// locking, as the embedded default opens cells.
func TestCellSemanticsWALExclusive(t *testing.T) {
	celltest.Run(t, celltest.Harness{Driver: wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithExclusiveLocking())})
}

// TestCellSemanticsWithoutPageCapture runs the suite once more with page
// capture hidden, so the runtime's other path — a commit-time image of the
// whole database handed to the log, which diffs it — runs in every test run.
func TestCellSemanticsWithoutPageCapture(t *testing.T) {
	celltest.Run(t, celltest.Harness{Driver: celltest.WithoutPageCapture(wasm.New())})
}

// TestCellSuiteRejectsTwins shows the suite fails each deliberately broken
// variant (per-statement commits, early acknowledgement, ...) on this
// driver.
func TestCellSuiteRejectsTwins(t *testing.T) {
	celltest.RunTwins(t, celltest.Harness{Driver: wasm.New()})
}

// BenchmarkCells measures events through the cell runtime on this driver
// against a raw transaction measured in the same run.
func BenchmarkCells(b *testing.B) {
	celltest.Benchmark(b, celltest.Harness{Driver: wasm.New()})
}
