package driver

import (
	"errors"
	"strconv"
)

// ErrNotAuthorized matches (via errors.Is) every error caused by the
// authorizer denying an action, whichever driver produced it, so callers can
// tell a policy refusal from a broken statement.
var ErrNotAuthorized = errors.New("not authorized")

// SQLite's primary result codes that callers commonly act on. An extended
// code's low byte is its primary code.
const (
	CodeError      = 1  // SQLITE_ERROR: generic error, e.g. bad SQL
	CodeBusy       = 5  // SQLITE_BUSY
	CodeInterrupt  = 9  // SQLITE_INTERRUPT: the statement was interrupted (e.g. ctx cancelled)
	CodeFull       = 13 // SQLITE_FULL
	CodeConstraint = 19 // SQLITE_CONSTRAINT: UNIQUE, NOT NULL, CHECK, FOREIGN KEY...
	CodeAuth       = 23 // SQLITE_AUTH: the authorizer denied the statement
)

// SQLiteError is an error reported by SQLite itself. Drivers return it (or
// wrap it) so callers can inspect the result code without knowing which
// SQLite library sits underneath.
type SQLiteError struct {
	// Code is the primary result code (e.g. CodeConstraint).
	Code int
	// ExtendedCode is the extended result code (e.g. 2067 for
	// SQLITE_CONSTRAINT_UNIQUE); equal to Code when SQLite gave none.
	ExtendedCode int
	// Msg is SQLite's error message.
	Msg string
}

func (e *SQLiteError) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = "SQLite error"
	}
	code := e.ExtendedCode
	if code == 0 {
		code = e.Code
	}
	return "sqlite: " + msg + " (code " + strconv.Itoa(code) + ")"
}

// Is makes errors.Is(err, ErrNotAuthorized) hold for SQLITE_AUTH errors.
func (e *SQLiteError) Is(target error) bool {
	return target == ErrNotAuthorized && e.Code == CodeAuth
}
