package modernc

import (
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	// ErrClosed is returned by every operation on a closed connection (or
	// one that a failed Restore could not reopen).
	ErrClosed = errors.New("modernc: connection is closed")
	// ErrCaptureNeedsFile is returned by Open when page capture is asked
	// for an in-memory database: capture reads the WAL, and an in-memory
	// database has none.
	ErrCaptureNeedsFile = errors.New("modernc: page capture needs a database file (Config.Path is empty)")
	// ErrInTransaction is returned by operations that must not run inside
	// an open transaction (Serialize, Restore).
	ErrInTransaction = errors.New("modernc: not allowed inside a transaction")
	// ErrInvalidImage is returned by Restore when the image is not a
	// SQLite database file; the current database is left untouched.
	ErrInvalidImage = errors.New("modernc: invalid database image")
	// ErrArguments is returned when the arguments do not match the
	// statement's parameters.
	ErrArguments = errors.New("modernc: arguments do not match the statement's parameters")
	// ErrArgumentType is returned for an argument of a Go type SQLite
	// cannot store (see driver.NormalizeArg); nothing runs.
	ErrArgumentType = errors.New("modernc: unsupported argument type")
	// ErrMultipleStatements is returned by Query for SQL holding more than
	// one statement.
	ErrMultipleStatements = errors.New("modernc: Query takes exactly one statement")
	// ErrCaptureBroken is returned by TakeCommits (and by the statement
	// whose commit could not be read) once the WAL could not be read
	// back; only Restore or reopening starts capture afresh.
	ErrCaptureBroken = errors.New("modernc: page capture failed")
	// ErrSessionClosed is returned by a Session used after Close, or after
	// its connection was closed or restored.
	ErrSessionClosed = errors.New("modernc: session is closed")
	// ErrChangesetConflict matches (errors.Is) every ConflictError.
	ErrChangesetConflict = errors.New("modernc: changeset conflict")
)

// sqliteError builds the error for result code rc, with the message SQLite
// recorded on db (when db is not 0).
func sqliteError(tls *libc.TLS, db uintptr, rc int32) error {
	msg := ""
	if db != 0 {
		msg = goString(sqlite3.Xsqlite3_errmsg(tls, db))
	}
	if msg == "" || msg == "not an error" {
		msg = goString(sqlite3.Xsqlite3_errstr(tls, rc))
	}
	return &driver.SQLiteError{Code: int(rc & 0xff), ExtendedCode: int(rc), Msg: msg}
}

// ConflictKind is SQLite's reason for a changeset conflict
// (SQLITE_CHANGESET_DATA, _NOTFOUND, _CONFLICT, _CONSTRAINT, _FOREIGN_KEY).
type ConflictKind int

const (
	ConflictData       ConflictKind = sqlite3.SQLITE_CHANGESET_DATA
	ConflictNotFound   ConflictKind = sqlite3.SQLITE_CHANGESET_NOTFOUND
	ConflictConflict   ConflictKind = sqlite3.SQLITE_CHANGESET_CONFLICT
	ConflictConstraint ConflictKind = sqlite3.SQLITE_CHANGESET_CONSTRAINT
	ConflictForeignKey ConflictKind = sqlite3.SQLITE_CHANGESET_FOREIGN_KEY
)

func (k ConflictKind) String() string {
	switch k {
	case ConflictData:
		return "the row's current values differ from the change's old values"
	case ConflictNotFound:
		return "the row to update or delete does not exist"
	case ConflictConflict:
		return "a row with the inserted primary key already exists"
	case ConflictConstraint:
		return "the change violates a constraint"
	case ConflictForeignKey:
		return "the changes leave foreign keys unsatisfied"
	}
	return fmt.Sprintf("conflict %d", int(k))
}

// ConflictError says why ApplyChangeset stopped. The whole changeset was
// rolled back: the database is as it was before the call.
type ConflictError struct {
	Kind ConflictKind
	// Table and Op ("INSERT", "UPDATE", "DELETE") describe the change that
	// conflicted; both are empty for ConflictForeignKey, which concerns the
	// changeset as a whole.
	Table string
	Op    string
}

func (e *ConflictError) Error() string {
	if e.Table == "" {
		return "modernc: changeset conflict: " + e.Kind.String()
	}
	return fmt.Sprintf("modernc: changeset conflict on %s into %q: %s", e.Op, e.Table, e.Kind)
}

// Is makes errors.Is(err, ErrChangesetConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrChangesetConflict }
