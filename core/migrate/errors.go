package migrate

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCellWritten is matched by every *CellWrittenError.
var ErrCellWritten = errors.New("the cell has been written before")

// CellWrittenError: the cell holds something already (a log in the
// bucket, or a local database on one host), so an import, which would
// replace it, is refused.
type CellWrittenError struct {
	Cell string
	// Found is what holds the cell: a bucket key or a local file.
	Found string
}

func (e *CellWrittenError) Error() string {
	return fmt.Sprintf("%s has been written before (%s exists): import only fills a cell that has never been written; choose another id, or delete the cell first", e.Cell, e.Found)
}

func (e *CellWrittenError) Is(target error) bool { return target == ErrCellWritten }

// SourceBusyError: the database file has a write-ahead log or a rollback
// journal beside it, so the file alone is not its newest committed state
// (an application, or Litestream, still has it open, or stopped without
// checkpointing).
type SourceBusyError struct {
	Path    string
	Sidecar string // the -wal or -journal file
}

func (e *SourceBusyError) Error() string {
	fold := fmt.Sprintf("sqlite3 %s 'PRAGMA wal_checkpoint(TRUNCATE)' folds it into the file", e.Path)
	if strings.HasSuffix(e.Sidecar, "-journal") {
		fold = fmt.Sprintf("sqlite3 %s 'PRAGMA quick_check' rolls it back", e.Path)
	}
	return fmt.Sprintf("%s is in use or was not closed cleanly (%s holds part of its state): stop every program that opens it; "+
		"if %s remains, %s (or import the Litestream replica instead)", e.Path, e.Sidecar, e.Sidecar, fold)
}

// NotDatabaseError: the source is not a SQLite database CellB can import.
type NotDatabaseError struct {
	Path   string
	Reason string
}

func (e *NotDatabaseError) Error() string {
	return fmt.Sprintf("%s is not a SQLite database to import: %s", e.Path, e.Reason)
}
