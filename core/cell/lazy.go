package cell

import (
	"context"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/lease"
)

// An activation does no work it need not do (docs/runtime.md, "Lazy
// activation"):
//
//   - A cell that holds nothing yet — no local database file, and a log
//     that holds nothing for it (durability.Prober) — opens on a private,
//     empty in-memory database (database.virgin). The runtime's own reads
//     (KV, alarm, wake row) answer "nothing stored" without SQL; user SQL
//     that only reads runs on the in-memory database. The first write (a
//     KV put, an alarm, a user statement that would write: the authorizer
//     tells, see stmtGuard.probe) creates the file, opens the log and
//     writes celld's tables into the turn's transaction before the write
//     itself (database.materialize); the in-memory database held no
//     state, so nothing is lost by leaving it. A cell that is only read
//     creates no file, no log object and records no epoch.
//   - A stored cell is opened and read: celld's tables, the actor's name
//     and the wake row are checked, not rewritten. The wake row's epoch is
//     raised, and a lazily recorded lease epoch (lease.EpochRecorder) is
//     made durable, by the first turn that writes, before its commit.
//
// lazyState is the epoch's bookkeeping that waits for that first write.
// The instance's mu guards it.
type lazyState struct {
	book     bool       // the epoch's bookkeeping waits for the first write
	bookMark changeMark // change counters at open, to see that first write
	recorded bool       // the grant's epoch is durable (or needs no recording)
}

// openEmpty opens a cell that holds nothing on an empty in-memory
// database.
func (inst *instance) openEmpty(ctx context.Context) error {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if err := inst.db.openEmpty(ctx); err != nil {
		return err
	}
	// Nothing is stored, so there is nothing to announce until the first
	// write creates the cell under this epoch.
	inst.wake.opened(0, false)
	inst.alarm.markChanged()
	go inst.watchLease()
	return nil
}

// materializeLocked creates the file of a cell opened on the in-memory
// database, at its first write (database.materialize): the epoch is
// recorded and celld's tables written into the turn's transaction on the
// file. The caller holds inst.mu inside a turn.
func (inst *instance) materializeLocked(ctx context.Context) error {
	return inst.db.materialize(ctx, inst.grant, func(ctx context.Context) error {
		if err := inst.recordEpoch(ctx); err != nil {
			return err
		}
		return inst.bookkeepLocked(ctx)
	})
}

// lockWrite is lockTurn for a runtime statement that stores something: a
// cell still on its in-memory database gets its file first.
func (inst *instance) lockWrite(ctx context.Context) (unlock func(), err error) {
	unlock, err = inst.lockTurn(ctx)
	if err != nil {
		return nil, err
	}
	if err := inst.materializeLocked(ctx); err != nil {
		unlock()
		return nil, fmt.Errorf("cell: create the database: %w", err)
	}
	if err := inst.applyDatabaseLimitLocked(ctx); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// userWrite runs user SQL: on the in-memory database with writes refused
// by the authorizer, and, if the statement would write, again on the file
// it creates first. The caller holds inst.mu inside a turn.
func (inst *instance) userWrite(ctx context.Context, query string, fn func() error) error {
	if !inst.db.virgin {
		return inst.runUser(ctx, query, fn)
	}
	writes, err := inst.guard.probe(query, fn)
	if !writes {
		return err
	}
	if err := inst.materializeLocked(ctx); err != nil {
		return fmt.Errorf("cell: create the database: %w", err)
	}
	return inst.runUser(ctx, query, fn)
}

// writesState reports whether an authorizer action stores something (or
// changes the connection's settings), which an in-memory database must not
// take in place of the file.
func writesState(action driver.Action, arg1, arg2 string) bool {
	switch action {
	case driver.ActionRead, driver.ActionSelect, driver.ActionFunction, driver.ActionRecursive:
		return false
	case driver.ActionPragma:
		name := strings.ToLower(arg1)
		return name == "optimize" || (arg2 != "" && !namePragmas[name])
	}
	return true
}

// readyLocked checks, reading only, that a stored database has celld's
// tables, the actor's name and a wake row that agrees with its alarm and
// is not above the grant's epoch. If so the epoch's bookkeeping waits for
// the first write; if not (or in a fleet that announces its epoch at
// once) the caller writes it now.
func (inst *instance) readyLocked(ctx context.Context) (bool, error) {
	if inst.rt.opts.Wake != nil {
		return false, nil
	}
	conn := inst.db.conn
	n, err := queryInt(ctx, conn, sqlSchemaCount)
	if err != nil || n != schemaObjects {
		return false, err
	}
	if inst.id.Name() != "" {
		if n, err := queryInt(ctx, conn, sqlHasMetadata, inst.key); err != nil || n == 0 {
			return false, err
		}
	}
	if n, err := queryInt(ctx, conn, sqlHasWake, inst.key); err != nil || n == 0 {
		return false, err
	}
	seq, err := inst.checkWakeLocked(ctx, inst.grant.Epoch())
	if err != nil {
		return false, err
	}
	inst.wake.opened(seq, false) // no wake index: nothing to announce
	if inst.lazy.bookMark, err = readChangeMark(ctx, conn); err != nil {
		return false, err
	}
	inst.lazy.book = true
	return true, nil
}

// firstWriteLocked runs before a turn's commit: if the turn wrote and the
// epoch's bookkeeping still waits, it raises the wake row's epoch and
// records the grant's epoch, inside the transaction about to commit.
func (inst *instance) firstWriteLocked(ctx context.Context) error {
	if !inst.lazy.book {
		return nil
	}
	m, err := readChangeMark(ctx, inst.db.conn)
	if err != nil {
		return err
	}
	if m == inst.lazy.bookMark {
		return nil
	}
	if err := inst.recordEpoch(ctx); err != nil {
		return err
	}
	if _, err := inst.db.conn.Exec(ctx, sqlWakeSeed, inst.key, formatWakeEpoch(inst.grant.Epoch()), inst.key); err != nil {
		return fmt.Errorf("raise the wake record's epoch: %w", err)
	}
	inst.lazy.book = false
	return nil
}

// recordEpoch makes the grant's epoch durable, once, before anything is
// written under it (lease.EpochRecorder); other grants need nothing.
func (inst *instance) recordEpoch(ctx context.Context) error {
	if inst.lazy.recorded {
		return nil
	}
	if r, ok := inst.grant.(lease.EpochRecorder); ok {
		if err := r.RecordEpoch(ctx); err != nil {
			return fmt.Errorf("record the lease epoch: %w", err)
		}
	}
	inst.lazy.recorded = true
	return nil
}

// schemaObjects is how many of schemaSQL's tables and triggers exist in a
// database whose celld tables are complete.
const schemaObjects = 8

const (
	sqlSchemaCount = rtSQL + `SELECT count(*) FROM sqlite_schema WHERE name IN ('_cf_KV','_cf_ALARM','_cf_METADATA','_cf_FACETS','_cf_WAKE','_cf_WAKE_insert','_cf_WAKE_update','_cf_WAKE_delete')`
	sqlHasMetadata = rtSQL + `SELECT count(*) FROM _cf_METADATA WHERE scope = ?`
	sqlHasWake     = rtSQL + `SELECT count(*) FROM _cf_WAKE WHERE scope = ?`
)

func queryInt(ctx context.Context, conn driver.Conn, q string, args ...any) (int64, error) {
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		if err := driver.ScanValues(rows.Values(), &n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}
