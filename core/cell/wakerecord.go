package cell

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// The _cf_WAKE row is celld's installation identity of a cell's alarm: the
// writer's ownership epoch (16 lowercase hex digits) and a sequence that
// the triggers in schemaSQL advance on every change to _cf_ALARM. A fleet
// names each wake publication by (epoch, sequence), so the pair must never
// repeat: the epoch only ever rises, and the sequence is never reset, not
// even when the epoch changes (an old publication's retirement must never
// name a newer installation).
const (
	// sqlWakeSeed installs the row on open: a new row starts at sequence 0
	// with whatever alarm the database already holds (a database from
	// before _cf_WAKE keeps its deadline and gets an identity in this
	// epoch); an existing row only has its epoch raised. Both writers
	// render epochs as 16 lowercase hex digits, so text order is numeric
	// order.
	sqlWakeSeed = rtSQL + `INSERT INTO _cf_WAKE(scope, epoch, sequence, at_ms)
VALUES(?, ?, 0, (SELECT at_ms FROM _cf_ALARM WHERE scope = ?))
ON CONFLICT(scope) DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch > _cf_WAKE.epoch`
	// sqlWakeOpenCheck reads the row back with whether it agrees with the
	// alarm: a disagreement means the alarm changed without the triggers.
	sqlWakeOpenCheck = rtSQL + `SELECT w.epoch, w.sequence, w.at_ms IS (SELECT a.at_ms FROM _cf_ALARM AS a WHERE a.scope = w.scope)
FROM _cf_WAKE AS w WHERE w.scope = ?`
	sqlWakeGet = rtSQL + `SELECT epoch, sequence, at_ms FROM _cf_WAKE WHERE scope = ?`
)

// WakeRecordError is an activation refused because the cell's _cf_WAKE row
// cannot give its alarm a trustworthy identity: the lease's epoch is below
// the row's (the ownership protocol went backwards), the row disagrees with
// _cf_ALARM (the alarm changed without the triggers), or the row is
// malformed. Activation fails with it (inside an *ActivationError).
type WakeRecordError struct {
	Key    string
	Reason string
}

func (e *WakeRecordError) Error() string {
	return fmt.Sprintf("cell %s: wake record: %s", e.Key, e.Reason)
}

// wakeRow is a cell's _cf_WAKE row.
type wakeRow struct {
	epoch uint64
	seq   uint64
	atMs  *int64
}

// formatWakeEpoch renders an epoch as _cf_WAKE stores it.
func formatWakeEpoch(epoch uint64) string { return fmt.Sprintf("%016x", epoch) }

// parseWakeEpoch reads an epoch as _cf_WAKE stores it: exactly 16
// lowercase hex digits. Anything else is refused rather than guessed at,
// since the epoch is compared as text when it is raised.
func parseWakeEpoch(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("epoch %q is not 16 hex digits", s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, fmt.Errorf("epoch %q is not 16 lowercase hex digits", s)
		}
		n = n<<4 | uint64(d)
	}
	return n, nil
}

// scanWakeRow decodes epoch and sequence columns.
func scanWakeRow(epochText string, seq int64) (wakeRow, error) {
	epoch, err := parseWakeEpoch(epochText)
	if err != nil {
		return wakeRow{}, err
	}
	if seq < 0 {
		return wakeRow{}, fmt.Errorf("sequence %d is negative", seq)
	}
	return wakeRow{epoch: epoch, seq: uint64(seq)}, nil
}

// initWakeLocked seeds or raises the cell's _cf_WAKE row inside the
// activation's transaction (schemaSQL has run) and remembers its sequence,
// so a later commit can tell whether it changed the alarm.
//
// A grant with epoch 0 (no ownership protocol: a single host) never lowers
// a row a fleet wrote; a positive epoch below the row's is refused, as
// celld refuses it: two writers would share identities.
func (inst *instance) initWakeLocked(ctx context.Context) error {
	epoch := inst.grant.Epoch()
	if _, err := inst.db.conn.Exec(ctx, sqlWakeSeed, inst.key, formatWakeEpoch(epoch), inst.key); err != nil {
		return fmt.Errorf("install the wake record: %w", err)
	}
	seq, err := inst.checkWakeLocked(ctx, epoch)
	if err != nil {
		return err
	}
	inst.wake.opened(seq, inst.rt.opts.Wake != nil)
	return nil
}

// checkWakeLocked reads the cell's _cf_WAKE row and checks it: not above
// the grant's epoch (a positive one), and in agreement with _cf_ALARM. It
// returns the row's sequence.
func (inst *instance) checkWakeLocked(ctx context.Context, epoch uint64) (uint64, error) {
	rows, err := inst.db.conn.Query(ctx, sqlWakeOpenCheck, inst.key)
	if err != nil {
		return 0, fmt.Errorf("read the wake record: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("read the wake record: %w", err)
		}
		return 0, &WakeRecordError{Key: inst.key, Reason: "the row is missing after it was installed"}
	}
	var epochText string
	var seq int64
	var agree bool
	if err := driver.ScanValues(rows.Values(), &epochText, &seq, &agree); err != nil {
		return 0, fmt.Errorf("read the wake record: %w", err)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read the wake record: %w", err)
	}
	w, err := scanWakeRow(epochText, seq)
	if err != nil {
		return 0, &WakeRecordError{Key: inst.key, Reason: err.Error()}
	}
	if epoch > 0 && w.epoch > epoch {
		return 0, &WakeRecordError{Key: inst.key, Reason: fmt.Sprintf("the lease's epoch %d is below the record's epoch %d: an epoch cannot move backwards", epoch, w.epoch)}
	}
	if !agree {
		return 0, &WakeRecordError{Key: inst.key, Reason: "the alarm and its wake installation disagree"}
	}
	return w.seq, nil
}

// readWakeLocked reads the cell's committed _cf_WAKE row.
func (inst *instance) readWakeLocked(ctx context.Context) (wakeRow, error) {
	if inst.db.virgin {
		return wakeRow{epoch: inst.grant.Epoch(), seq: inst.wake.seq}, nil // nothing stored yet
	}
	rows, err := inst.db.conn.Query(ctx, sqlWakeGet, inst.key)
	if err != nil {
		return wakeRow{}, fmt.Errorf("read the wake record: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return wakeRow{}, fmt.Errorf("read the wake record: %w", err)
		}
		return wakeRow{}, &WakeRecordError{Key: inst.key, Reason: "the row is missing"}
	}
	var epochText string
	var seq int64
	var at *int64
	if err := driver.ScanValues(rows.Values(), &epochText, &seq, &at); err != nil {
		return wakeRow{}, fmt.Errorf("read the wake record: %w", err)
	}
	if err := rows.Err(); err != nil {
		return wakeRow{}, fmt.Errorf("read the wake record: %w", err)
	}
	w, err := scanWakeRow(epochText, seq)
	if err != nil {
		return wakeRow{}, &WakeRecordError{Key: inst.key, Reason: err.Error()}
	}
	w.atMs = at
	return w, nil
}
