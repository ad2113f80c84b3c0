// Package cgo is CellB's SQLite driver on github.com/mattn/go-sqlite3:
// native SQLite compiled with cgo.
//
// Databases run in WAL mode. With Config.PageCapture the driver turns
// automatic checkpoints off and, after every commit, reads the commit's
// frames from the -wal file (package core/wal) so TakeCommits can hand the
// changed pages to the durability log; it checkpoints the log itself once
// the frames are read and the file has grown (Driver.CheckpointBytes).
// Serialize copies every page through SQLite's pager, so the image is exact;
// Restore writes the image atomically next to the database and reopens it.
//
// The build needs cgo and a C compiler (gcc or clang); the first build
// compiles the SQLite amalgamation, which takes about 45 s on two cores.
// No build tags are required. Without cgo (CGO_ENABLED=0) the package
// compiles but is empty, so a program using Driver fails at build time
// (see nocgo.go); cmd/cellb imports it from a `//go:build cgo` file. The
// session extension is not compiled in by default, so this driver declares
// Sessions: false.
//
// Differences from mattn/go-sqlite3's own database/sql behaviour, chosen to
// meet the driver port:
//   - Rows return SQLite's storage classes unchanged. mattn converts columns
//     declared DATE, DATETIME, TIMESTAMP or BOOLEAN to time.Time or bool,
//     losing the stored value (text that does not parse becomes the zero
//     time, 5 becomes true); this driver switches that conversion off.
//   - The authorizer, commit and WAL hooks are registered on SQLite's
//     handle directly: mattn's authorizer drops the trigger-name argument,
//     and mattn has no WAL hook (see native.go and docs/drivers-cgo.md).
//   - Exec with several statements hands the arguments out in order: each
//     statement takes as many as it has placeholders. With one statement
//     that has placeholders this is the port's rule; a statement that needs
//     more arguments than remain fails before it runs; arguments left over
//     at the end are ignored, as mattn ignores them.
package cgo
