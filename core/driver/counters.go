package driver

// CountedRows is implemented by the Rows of a driver with
// Capabilities.StatementCounters. The counts come from SQLite's own
// counters for the one statement, not from the runtime's guesses:
//
//   - rows read: the larger of the rows the statement returned and the
//     rows its full-table scans visited (sqlite3_stmt_status's
//     SQLITE_STMTSTATUS_FULLSCAN_STEP counts the moves to a next row, so
//     one is added for the row the scan started on). Rows an index
//     search visits are counted only when returned; SQLite keeps no
//     count of them.
//   - rows written: the rows the statement inserted, updated or deleted,
//     those its triggers changed included (the change in
//     sqlite3_total_changes over the statement). It is known once the
//     statement has run to completion (Next returned false) and 0 before.
//
// A statement run again (a cached statement) counts from zero each time.
// Drivers without the capability do not implement it, and their Exec
// leaves Result.Counted false.
type CountedRows interface {
	// Counters are the counts so far: rows read grow as Next steps.
	Counters() (read, written int64)
}
