package tests

import (
	"io"
	"log/slog"
)

// quietLogger discards what the runtime logs.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
