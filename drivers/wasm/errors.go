package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3"
)

// Errors of the connection's own rules (SQLite's errors come as
// *driver.SQLiteError).
var (
	// ErrClosed: the connection was closed (or broken by a failed Restore).
	ErrClosed = errors.New("drivers/wasm: connection is closed")
	// ErrInTransaction: the operation needs the connection outside a
	// transaction (Serialize, Restore, Begin).
	ErrInTransaction = errors.New("drivers/wasm: a transaction is open")
	// ErrNoTransaction: Commit without an open transaction.
	ErrNoTransaction = errors.New("drivers/wasm: no transaction is open")
	// ErrArguments: the arguments do not fit the statement's parameters.
	ErrArguments = errors.New("drivers/wasm: wrong arguments")
	// ErrManagedPragma: the statement would change a setting the driver
	// relies on (journal_mode=WAL, locking_mode=EXCLUSIVE). It also
	// matches driver.ErrNotAuthorized, since the refusal comes through
	// SQLite's authorizer.
	ErrManagedPragma = errors.New("drivers/wasm: setting is managed by the driver")
	// ErrInUse: opening a database file failed because another
	// connection holds its lock past the busy timeout: one opened with
	// WithExclusiveLocking holds it until it closes, and a connection
	// with that option needs the file to itself. It wraps SQLite's
	// *driver.SQLiteError (SQLITE_BUSY).
	ErrInUse = errors.New("drivers/wasm: the database is held by another connection")
)

// inUse marks a busy error while opening a file as ErrInUse.
func inUse(c *Conn, err error) error {
	var se *driver.SQLiteError
	if !c.mem && errors.As(err, &se) && se.Code == driver.CodeBusy {
		return fmt.Errorf("%w: %w", ErrInUse, err)
	}
	return err
}

var errNoMainFile = errors.New("drivers/wasm: the main database is not open through the driver's VFS")

// sqliteError converts an error from the library into a
// *driver.SQLiteError carrying SQLite's codes and message; a statement
// interrupted because ctx ended also matches ctx.Err().
func sqliteError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *driver.SQLiteError
	if errors.As(err, &se) {
		return err
	}
	var code sqlite3.ExtendedErrorCode
	if !errors.As(err, &code) {
		return err
	}
	out := &driver.SQLiteError{
		Code:         int(code.Code()),
		ExtendedCode: int(code),
		Msg:          sqliteMessage(err, code),
	}
	if out.Code == driver.CodeInterrupt && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", out, ctx.Err())
	}
	return out
}

// sqliteMessage is SQLite's own message for err, without the library's
// "sqlite3: " prefix.
func sqliteMessage(err error, code sqlite3.ExtendedErrorCode) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "sqlite3: ")
	// The library prefixes the code's generic text ("constraint failed: ")
	// to SQLite's message; keep SQLite's message alone when there is one.
	generic := strings.TrimPrefix(code.Code().Error(), "sqlite3: ")
	if rest, ok := strings.CutPrefix(msg, generic+": "); ok && rest != "" {
		return rest
	}
	return msg
}
