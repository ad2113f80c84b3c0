//go:build cgo

package cgo

import (
	"strconv"
	"strings"

	"github.com/mattn/go-sqlite3"

	"github.com/cellb/cellb/core/driver"
)

// SetAuthorizer installs fn for statements prepared from now on. Replacing
// SQLite's authorizer expires every prepared statement, so statements
// cached before the call are checked again when next used. The driver's
// own statements (transaction control, page_count, checkpoints, Serialize)
// bypass fn.
func (c *conn) SetAuthorizer(fn driver.Authorizer) error {
	if c.sc == nil {
		return ErrClosed
	}
	c.auth = fn
	return c.installAuthorizer()
}

// installAuthorizer registers c.authorize when there is a user authorizer
// or page capture (whose guard it carries), and nothing otherwise.
func (c *conn) installAuthorizer() error {
	if c.auth == nil && c.cap == nil {
		return setAuthorizer(c.sc, 0)
	}
	return setAuthorizer(c.sc, uintptr(c.handle))
}

// authorize runs while SQLite prepares a statement. A commit not read yet
// (see installHooks) is read first, before the statement can checkpoint or
// restart the WAL; reading files is all the callback does, since SQLite
// forbids using the connection from inside it.
func (c *conn) authorize(op int, arg1, arg2, db, trigger string) int {
	if c.cap != nil && c.cap.dirty() {
		c.cap.read()
	}
	if c.internal {
		return sqlite3.SQLITE_OK
	}
	action := driver.Action(op)
	if c.cap != nil && action == driver.ActionPragma && (db == "" || db == "main") {
		unread := c.cap.dirty() && strings.EqualFold(arg1, "wal_checkpoint")
		if unread || unsafeUnderCapture(arg1, arg2) {
			c.denied = arg1
			return sqlite3.SQLITE_DENY
		}
	}
	if c.auth == nil {
		return sqlite3.SQLITE_OK
	}
	return int(c.auth(action, arg1, arg2, db, trigger))
}

// unsafeUnderCapture reports pragma settings that would make the WAL stop
// carrying every commit: leaving WAL mode, or letting SQLite checkpoint
// (and then restart the log) on its own between two of the driver's reads.
func unsafeUnderCapture(name, arg string) bool {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return false // a query, not a change
	}
	switch strings.ToLower(name) {
	case "journal_mode":
		return !strings.EqualFold(arg, "wal")
	case "wal_autocheckpoint":
		n, err := strconv.Atoi(arg)
		return err != nil || n > 0
	}
	return false
}
