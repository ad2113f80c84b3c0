package modernc

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/cellb/cellb/core/driver"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

var conflictCallback = cFunc(conflictTrampoline)

// StartSession records row changes to the named tables of the main
// database from now on, or to every table when none are named (including
// tables created later). As with SQLite's session extension, only tables
// with a PRIMARY KEY are recorded; changes to others are ignored.
func (c *Conn) StartSession(ctx context.Context, tables ...string) (driver.Session, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	defer c.asInternal(true)()
	out := c.tls.Alloc(8)
	defer c.tls.Free(8)
	if rc := sqlite3.Xsqlite3session_create(c.tls, c.db, c.zMain, out); rc != sqlite3.SQLITE_OK {
		return nil, fmt.Errorf("modernc: start session: %w", sqliteError(c.tls, c.db, rc))
	}
	s := &session{c: c, h: cReadPtr(out)}
	if len(tables) == 0 {
		tables = []string{""}
	}
	for _, t := range tables {
		if err := s.attach(t); err != nil {
			sqlite3.Xsqlite3session_delete(c.tls, s.h)
			return nil, err
		}
	}
	c.sessions[s] = struct{}{}
	return s, nil
}

// session is one sqlite3_session; it dies with its connection's handle.
type session struct {
	c *Conn
	h uintptr // sqlite3_session*, 0 once closed
}

var _ driver.Session = (*session)(nil)

// attach adds table, or every table for "".
func (s *session) attach(table string) error {
	var zTab uintptr
	if table != "" {
		var err error
		if zTab, err = cStringAlloc(s.c.tls, table); err != nil {
			return err
		}
		defer cFree(s.c.tls, zTab)
	}
	if rc := sqlite3.Xsqlite3session_attach(s.c.tls, s.h, zTab); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("modernc: session attach %q: %w", table, sqliteError(s.c.tls, s.c.db, rc))
	}
	return nil
}

// Changeset returns the changes recorded so far, empty if none.
func (s *session) Changeset() ([]byte, error) {
	if s.h == 0 {
		return nil, ErrSessionClosed
	}
	defer s.c.asInternal(true)() // it reads table layouts with pragmas
	tls := s.c.tls
	out := tls.Alloc(16)
	defer tls.Free(16)
	if rc := sqlite3.Xsqlite3session_changeset(tls, s.h, out, out+8); rc != sqlite3.SQLITE_OK {
		return nil, fmt.Errorf("modernc: changeset: %w", sqliteError(tls, s.c.db, rc))
	}
	n, p := int(cReadInt32(out)), cReadPtr(out+8)
	defer sqlite3.Xsqlite3_free(tls, p)
	return append([]byte{}, cBytes(p, n)...), nil
}

// Close ends the session. Closing twice is harmless.
func (s *session) Close() error {
	if s.h == 0 {
		return nil
	}
	sqlite3.Xsqlite3session_delete(s.c.tls, s.h)
	delete(s.c.sessions, s)
	s.h = 0
	return nil
}

// abandon deletes a session whose connection is closing or being restored:
// SQLite requires sessions to go before their database handle.
func (s *session) abandon() { _ = s.Close() }

// ApplyChangeset applies a changeset from a Session, all or nothing: any
// conflict (a row changed or missing, a duplicate key, a constraint)
// aborts it, leaves the database as it was, and returns a *ConflictError
// (errors.Is ErrChangesetConflict). A malformed changeset fails with
// SQLite's error, also changing nothing. Outside a transaction the apply
// is one commit.
func (c *Conn) ApplyChangeset(ctx context.Context, changeset []byte) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	if len(changeset) == 0 {
		return nil
	}
	if len(changeset) > math.MaxInt32 {
		return fmt.Errorf("modernc: changeset of %d bytes exceeds SQLite's 2 GiB limit", len(changeset))
	}
	buf, err := cMalloc(c.tls, len(changeset))
	if err != nil {
		return err
	}
	defer cFree(c.tls, buf)
	copy(cBytes(buf, len(changeset)), changeset)
	// SQLite applies under a savepoint of its own, but a changeset cut
	// short can fail only after that savepoint was released, with part of
	// it applied; the driver's own savepoint around the call makes the
	// apply all or nothing whatever the input.
	outer := c.InTransaction()
	if err := c.execInternal(ctx, "SAVEPOINT cellb_apply_changeset"); err != nil {
		return err
	}
	defer c.asInternal(true)()
	// The changeset already holds every row the source's triggers wrote;
	// running the target's triggers again would write those rows twice
	// (and conflict with the recorded ones), so they are off for the apply.
	triggersWere, terr := c.setTriggers(false)
	if terr != nil {
		c.execInternal(context.WithoutCancel(ctx), "ROLLBACK TO cellb_apply_changeset; RELEASE cellb_apply_changeset")
		return terr
	}
	defer c.setTriggers(triggersWere)
	stop := c.watch(ctx)
	c.conflict = nil
	rc := sqlite3.Xsqlite3changeset_apply(c.tls, c.db, int32(len(changeset)), buf, 0, conflictCallback, c.handle)
	stop()
	conflict := c.conflict
	c.conflict = nil
	err = nil
	switch {
	case conflict != nil:
		err = conflict
	case rc != sqlite3.SQLITE_OK:
		err = ctxError(ctx, fmt.Errorf("modernc: apply changeset: %w", sqliteError(c.tls, c.db, rc)))
	}
	background := context.WithoutCancel(ctx)
	switch {
	case err == nil:
		return c.execInternal(background, "RELEASE cellb_apply_changeset")
	case outer: // keep the caller's transaction, drop only the apply
		return errors.Join(err,
			c.execInternal(background, "ROLLBACK TO cellb_apply_changeset"),
			c.execInternal(background, "RELEASE cellb_apply_changeset"))
	default: // the savepoint began the transaction: end it writing nothing
		return errors.Join(err, c.execInternal(background, "ROLLBACK"))
	}
}

// conflictTrampoline is the changeset conflict handler: it notes what
// conflicted and aborts the apply.
func conflictTrampoline(tls *libc.TLS, handle uintptr, kind int32, iter uintptr) int32 {
	c := lookupConn(handle)
	if c == nil {
		return sqlite3.SQLITE_CHANGESET_ABORT
	}
	e := &ConflictError{Kind: ConflictKind(kind)}
	if kind != sqlite3.SQLITE_CHANGESET_FOREIGN_KEY {
		out := tls.Alloc(32)
		defer tls.Free(32)
		// out: table name, column count, op, indirect flag.
		if sqlite3.Xsqlite3changeset_op(tls, iter, out, out+8, out+16, out+24) == sqlite3.SQLITE_OK {
			e.Table = goString(cReadPtr(out))
			switch cReadInt32(out + 16) {
			case sqlite3.SQLITE_INSERT:
				e.Op = "INSERT"
			case sqlite3.SQLITE_UPDATE:
				e.Op = "UPDATE"
			case sqlite3.SQLITE_DELETE:
				e.Op = "DELETE"
			}
		}
	}
	if c.conflict == nil {
		c.conflict = e
	}
	return sqlite3.SQLITE_CHANGESET_ABORT
}

// setTriggers turns the firing of triggers on or off for this connection
// (SQLITE_DBCONFIG_ENABLE_TRIGGER) and returns whether they were on.
func (c *Conn) setTriggers(on bool) (bool, error) {
	was, err := c.triggerConfig(-1) // a negative value only reads
	if err != nil {
		return false, err
	}
	v := int32(0)
	if on {
		v = 1
	}
	if _, err := c.triggerConfig(v); err != nil {
		return false, err
	}
	return was, nil
}

// triggerConfig calls sqlite3_db_config(SQLITE_DBCONFIG_ENABLE_TRIGGER, v)
// and returns the setting SQLite reports after the call.
func (c *Conn) triggerConfig(v int32) (bool, error) {
	out := c.tls.Alloc(8)
	defer c.tls.Free(8)
	*(*int32)(cPointer(out)) = 0
	va := libc.NewVaList(v, out)
	if va == 0 {
		return false, errors.New("modernc: out of memory")
	}
	defer libc.Xfree(c.tls, va)
	if rc := sqlite3.Xsqlite3_db_config(c.tls, c.db, sqlite3.SQLITE_DBCONFIG_ENABLE_TRIGGER, va); rc != sqlite3.SQLITE_OK {
		return false, fmt.Errorf("modernc: switch triggers: %w", sqliteError(c.tls, c.db, rc))
	}
	return *(*int32)(cPointer(out)) != 0, nil
}
