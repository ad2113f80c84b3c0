// Package modernc is CellB's SQLite driver on modernc.org/sqlite, SQLite
// translated from C to Go: no cgo, and the only driver whose SQLite build
// includes the session extension, so it is the one that can carry the
// changeset log.
//
// The library's database/sql driver hides the sqlite3* handle, so this
// package opens each database itself through the C API the library exports
// (modernc.org/sqlite/lib) and keeps that binding deliberately small: one
// libc TLS per connection, every C allocation freed, every statement
// finalized.
//
// File databases run in WAL mode with locking_mode=EXCLUSIVE: the cell is
// the only user of its file, the lock makes that true (a second connection
// to the same file fails with SQLITE_BUSY instead of silently writing
// commits this connection never sees), and SQLite then keeps the WAL index
// in memory, so no -shm file exists. With Config.PageCapture, automatic
// checkpoints are off and every commit's pages are read back from the WAL
// right after it commits (SQLite's WAL hook); see [Conn.TakeCommits].
//
// An in-memory database (Config.Path "") supports everything except page
// capture: there is no WAL to read.
package modernc
