package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/driver"
	"github.com/ncruces/go-sqlite3"
)

// authMode says whose SQL is being prepared.
type authMode uint8

const (
	// authUser: statements from Exec and Query. The driver's guard and
	// the user's authorizer both apply.
	authUser authMode = iota
	// authSetup: the configured pragmas. Only the guard applies.
	authSetup
	// authInternal: the driver's own statements (transaction control,
	// PRAGMA page_count, ...), which the user's authorizer must not be
	// able to break.
	authInternal
)

// authState is the connection's authorizer: the driver's guard in front of
// the user's function. It is installed once per SQLite connection and
// survives SetAuthorizer calls and reopens.
type authState struct {
	mode authMode
	wal  bool // the database runs in WAL mode
	// exclusive: the database holds its lock (WithExclusiveLocking).
	exclusive bool
	user      driver.Authorizer
	refused   string // the setting the guard last refused
}

// SetAuthorizer installs fn for statements prepared from now on; nil
// removes it. The driver calls fn with SQLite's action codes and arguments
// unchanged.
func (c *Conn) SetAuthorizer(fn driver.Authorizer) error {
	if err := c.usable(); err != nil {
		return err
	}
	c.auth.user = fn
	c.cache.clear() // cached statements were authorized by the old fn
	return nil
}

func (a *authState) authorize(action sqlite3.AuthorizerActionCode, arg1, arg2, database, trigger string) sqlite3.AuthorizerReturnCode {
	if a.mode == authInternal {
		return sqlite3.AUTH_OK
	}
	if action == sqlite3.AUTH_PRAGMA {
		if why := guardPragma(a.wal, a.exclusive, arg1, arg2); why != "" {
			a.refused = why
			return sqlite3.AUTH_DENY
		}
	}
	if a.mode == authUser && a.user != nil {
		return sqlite3.AuthorizerReturnCode(a.user(driver.Action(action), arg1, arg2, database, trigger))
	}
	return sqlite3.AUTH_OK
}

// guardPragma refuses the settings that would silently break the driver.
// A rollback-journal database must not switch to a write-ahead log (its
// commits would bypass the main file that capture and Serialize read) nor
// to exclusive locking (which keeps SQLite from releasing its lock at the
// end of each transaction, when a commit is captured). A WAL database must
// stay in WAL mode, where capture watches the log. A database opened with
// WithExclusiveLocking must keep its lock: another connection could then
// write commits this one never sees. No database may turn its
// journal off: ROLLBACK would then leave half-done changes behind, and the
// cell runtime rolls back every failed turn.
func guardPragma(wal, exclusive bool, name, value string) string {
	v := strings.ToLower(strings.Trim(strings.TrimSpace(value), `'"`))
	switch strings.ToLower(name) {
	case "journal_mode":
		if v == "" {
			return "" // reading the mode
		}
		if v == "off" {
			return "journal_mode=OFF (ROLLBACK must work)"
		}
		if wal && v != "wal" {
			return "journal_mode=" + v + " (this connection runs in WAL mode)"
		}
		if !wal && v == "wal" {
			return "journal_mode=WAL (this connection runs in rollback-journal mode)"
		}
	case "locking_mode":
		if exclusive {
			if v != "" && v != "exclusive" {
				return "locking_mode=" + v + " (this connection holds its file exclusively)"
			}
			return ""
		}
		if v == "exclusive" {
			return "locking_mode=EXCLUSIVE (commits are captured when SQLite releases its lock)"
		}
	}
	return ""
}

// userError converts an error from user SQL, naming the guard's refusal
// when it caused it.
func (c *Conn) userError(ctx context.Context, err error) error {
	err = sqliteError(ctx, err)
	if c.auth.refused != "" {
		why := c.auth.refused
		c.auth.refused = ""
		if errors.Is(err, driver.ErrNotAuthorized) {
			return fmt.Errorf("%w: %s: %w", ErrManagedPragma, why, err)
		}
	}
	return err
}
