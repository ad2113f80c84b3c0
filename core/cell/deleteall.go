package cell

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// ErrDeleteAllInTransaction is returned by State.DeleteAll called inside
// SQL.Transaction (Durable Objects refuse deleteAll() inside transaction()
// too): a rollback of the enclosing transaction could not undo half of it
// sensibly, and the point of DeleteAll is one commit of an empty database.
var ErrDeleteAllInTransaction = errors.New("cell: cannot call DeleteAll within a transaction")

// DeleteAll deletes everything the cell stores: every SQL table, index,
// view and trigger the object created, every KV key and the alarm, and
// resets PRAGMA user_version to 0. It joins the turn's implicit
// transaction, so it commits with the turn as one commit, and the reply
// waits for that commit to be durable like any write: the log then holds
// an empty database for the cell (a restore anywhere reads it empty). A
// rollback of the turn (a panic, Abort) undoes it entirely.
//
// Rows the turn still has open are closed first (SQLite cannot drop a
// table a running statement reads). The runtime's own bookkeeping
// (celld's _cf_METADATA and _cf_WAKE rows) is kept: it is not the
// object's data.
//
// As on a SQLite-backed Durable Object, the alarm is deleted too (the
// delete_all_deletes_alarm behaviour, the default since 2026-02-24).
// Inside SQL.Transaction it returns ErrDeleteAllInTransaction and changes
// nothing.
func (s *State) DeleteAll(ctx context.Context) error {
	inst := s.inst
	unlock, err := inst.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if inst.db.spDepth > 0 {
		return ErrDeleteAllInTransaction
	}
	inst.db.closeRows()
	inst.alarm.markChanged()
	if inst.db.virgin {
		// Nothing stored: an in-memory database that took no write holds
		// no user table either (any write creates the file first).
		return nil
	}
	if err := inst.deleteAllLocked(ctx); err != nil {
		return fmt.Errorf("cell: delete all: %w", err)
	}
	return nil
}

// deleteAllLocked empties the cell inside the open transaction. The
// caller holds inst.mu inside a turn.
func (inst *instance) deleteAllLocked(ctx context.Context) error {
	conn := inst.db.conn
	// A foreign key between two dropped tables must not stop a drop: the
	// check is deferred to the commit, by when both are gone.
	if _, err := conn.Exec(ctx, rtSQL+"PRAGMA defer_foreign_keys = ON"); err != nil {
		return err
	}
	// Views and triggers first, then virtual tables (which drop their own
	// shadow tables), then the remaining tables with their indexes.
	for _, kind := range []string{"view", "trigger", "vtable", "table"} {
		names, err := userObjects(ctx, conn, kind)
		if err != nil {
			return err
		}
		for _, name := range names {
			what := strings.ToUpper(kind)
			if kind == "vtable" {
				what = "TABLE"
			}
			if _, err := conn.Exec(ctx, rtSQL+"DROP "+what+" IF EXISTS "+quoteIdent(name)); err != nil {
				return fmt.Errorf("drop %s %s: %w", kind, name, err)
			}
		}
	}
	for _, q := range []string{sqlKVDeleteAll, sqlAlarmDelete, sqlFacetsDeleteAll} {
		if _, err := conn.Exec(ctx, q, inst.key); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, rtSQL+"PRAGMA user_version = 0"); err != nil {
		return err
	}
	return nil
}

const sqlFacetsDeleteAll = rtSQL + `DELETE FROM _cf_FACETS WHERE scope = ?`

// userObjects lists the schema objects of one kind that belong to the
// object: not celld's (_cf_*) nor SQLite's own (sqlite_*). kind "vtable"
// is the virtual tables, "table" the others.
func userObjects(ctx context.Context, conn driver.Conn, kind string) ([]string, error) {
	q := rtSQL + `SELECT name FROM sqlite_schema WHERE type = ? AND name NOT LIKE '\_cf\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`
	typ := kind
	switch kind {
	case "vtable":
		typ = "table"
		q += ` AND upper(sql) LIKE 'CREATE VIRTUAL TABLE%'`
	case "table":
		q += ` AND upper(sql) NOT LIKE 'CREATE VIRTUAL TABLE%'`
	}
	rows, err := conn.Query(ctx, q, typ)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", kind, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := driver.ScanValues(rows.Values(), &name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
