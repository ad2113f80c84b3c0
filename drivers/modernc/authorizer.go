package modernc

import (
	"strings"

	"github.com/cellb/cellb/core/driver"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

var authorizerCallback = cFunc(authorizerTrampoline)

// SetAuthorizer installs fn as SQLite's authorizer for statements prepared
// from now on (nil removes it). Idle cached statements are dropped, so each
// is authorized again under the new policy when next used. A denial makes
// the statement fail with an error matching driver.ErrNotAuthorized. The
// authorizer survives Restore.
func (c *Conn) SetAuthorizer(fn driver.Authorizer) error {
	if c.db == 0 {
		return ErrClosed
	}
	c.auth = fn
	for _, st := range c.cache.drain() {
		sqlite3.Xsqlite3_finalize(c.tls, st)
	}
	return c.installAuthorizer()
}

func (c *Conn) installAuthorizer() error {
	var rc int32
	if c.auth == nil && c.wal == nil {
		rc = sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, 0, 0)
	} else {
		rc = sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, authorizerCallback, c.handle)
	}
	if rc != sqlite3.SQLITE_OK {
		return sqliteError(c.tls, c.db, rc)
	}
	return nil
}

// authorizerTrampoline is the C authorizer: it finds the connection by the
// handle SQLite passes back and asks its Go authorizer, with SQLite's
// action code and arguments unchanged (NULL arguments become ""). On a
// capturing connection it is installed even without a Go authorizer, to
// refuse the pragmas that would silently end capture.
func authorizerTrampoline(_ *libc.TLS, handle uintptr, action int32, arg1, arg2, database, trigger uintptr) (res int32) {
	c := lookupConn(handle)
	switch {
	case c == nil:
		return sqlite3.SQLITE_DENY // fail closed
	case c.internal:
		return sqlite3.SQLITE_OK
	}
	a := driver.Action(action)
	if a == driver.ActionPragma && c.wal != nil && arg2 != 0 {
		if name := strings.ToLower(goString(arg1)); name == "journal_mode" || name == "wal_autocheckpoint" {
			c.refused = "a page-capturing connection must stay in WAL mode with automatic checkpoints off (PRAGMA " + name + " would make it miss commits)"
			return sqlite3.SQLITE_DENY
		}
	}
	if c.auth == nil {
		return sqlite3.SQLITE_OK // installed only for the check above
	}
	if a == driver.ActionPragma && c.stepping && len(c.sessions) > 0 && goString(arg1) == "table_xinfo" {
		// A session records its first change to a table by reading the
		// table's layout with PRAGMA table_xinfo, prepared from inside the
		// caller's statement. That read belongs to the driver's session,
		// not to the caller's SQL (a caller's own PRAGMA is authorized when
		// it is prepared, never while another statement runs).
		return sqlite3.SQLITE_OK
	}
	defer func() {
		if p := recover(); p != nil {
			c.panicked = p
			res = sqlite3.SQLITE_DENY
		}
	}()
	return int32(c.auth(a, goString(arg1), goString(arg2), goString(database), goString(trigger)))
}
