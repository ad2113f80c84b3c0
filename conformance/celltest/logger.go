package celltest

import (
	"io"
	"log/slog"
)

// quietLogger keeps the runtime's logs (resets, expected failures) out of
// test output.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
