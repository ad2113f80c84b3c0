package modernc

import (
	"github.com/cellb/cellb/core/driver"
	sqlite3 "modernc.org/sqlite/lib"
)

var _ driver.CountedRows = (*rows)(nil)

// Counters are the rows the statement read and wrote so far (see
// driver.CountedRows).
func (r *rows) Counters() (read, written int64) {
	if !r.closed && r.st != 0 {
		r.scanned = max(r.scanned, scanned(r.c, r.st))
	}
	return max(r.returned, r.scanned), r.written
}

// countDone records, once the statement ran to completion, what it
// scanned and wrote.
func (r *rows) countDone() {
	if r.st == 0 {
		return
	}
	r.scanned = max(r.scanned, scanned(r.c, r.st))
	if sqlite3.Xsqlite3_stmt_readonly(r.c.tls, r.st) == 0 {
		r.written = sqlite3.Xsqlite3_total_changes64(r.c.tls, r.c.db) - r.changesBefore
	}
}

// scanned is the rows a statement's full-table scans visited: SQLite
// counts the moves to a next row, so the row a scan starts on is added.
func scanned(c *Conn, st uintptr) int64 {
	n := int64(sqlite3.Xsqlite3_stmt_status(c.tls, st, sqlite3.SQLITE_STMTSTATUS_FULLSCAN_STEP, 0))
	if n > 0 {
		n++
	}
	return n
}
