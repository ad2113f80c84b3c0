//go:build !unix

package cell

// openFileLimit is unknown here; DefaultMaxOpenCells falls back to its
// fixed default.
func openFileLimit() uint64 { return 0 }
