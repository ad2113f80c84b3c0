// Package tests holds CellB's cross-module tests: the runtime (core/cell,
// core/host, core/ltxlog, core/fleet, ...) run in-process with a SQLite
// driver (drivers/*) and a bucket adapter (adapters/*), and the benchmarks
// and memory figures of docs/benchmarks.md measured that way. No module
// below may import its drivers or adapters (core/internal/layering), so a
// test that needs the runtime, a driver and an adapter at once lives here
// rather than in cmd/cellb, whose tests test the CLI.
//
// What belongs here: a test that would be the same without the cellb
// command. A test that runs the cellb binary to check what a command
// does, or calls cmd/cellb/app's commands, flags or serve wiring, stays
// in cmd/cellb/app; a test of one package stays beside it. The rule and
// the line counts are in docs/testing.md.
//
// The module holds this file and _test.go files only: it exports nothing
// and nothing may import it (the layering test enforces both).
package tests
