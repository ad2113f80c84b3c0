package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
)

// LocalDurabilityError: outside a fleet (single host, or no ownership)
// the driver runs SQLite below the synchronous level the ownership and
// durability mode need (Synchronous), so a power failure could lose an
// acknowledged commit or leave the local file inconsistent. Have and Need
// are SQLite's synchronous levels (OFF, NORMAL, FULL, EXTRA); Journal is
// the driver's journal mode.
type LocalDurabilityError struct {
	Ownership Ownership
	Have      string
	Need      string
	Journal   string
	Why       string
}

// Is makes the error match ErrConfig, as every refused Config does.
func (e *LocalDurabilityError) Is(target error) bool { return target == ErrConfig }

func (e *LocalDurabilityError) Error() string {
	return fmt.Sprintf("host: the driver runs SQLite with synchronous=%s (journal_mode=%s), but %s needs synchronous=%s: %s",
		e.Have, e.Journal, e.Ownership, e.Need, e.Why)
}

// synchronousNames are PRAGMA synchronous's levels by number.
var synchronousNames = []string{"OFF", "NORMAL", "FULL", "EXTRA"}

// Synchronous is the SQLite synchronous level a node's driver should run
// with, for its ownership and durability mode, in WAL mode: OFF in a fleet
// (the bucket wins: every activation replaces the local file, and a reply
// waits for the bucket); NORMAL for a single host under a mode whose log
// acknowledges from the bucket (Mode.AcksFromBucket: a file that may lack
// acknowledged commits after a machine restart is rebuilt from the bucket,
// and where the system names no boot the log syncs the file once per group
// commit instead), and where the local file is the primary copy under a
// mode whose log syncs the file once per group commit (Mode.SyncsLocal);
// FULL otherwise (after a power loss a database that is not empty is never
// restored from the bucket). NORMAL is enough only in WAL mode, where it
// leaves the file consistent after a power loss, without its newest
// commits at worst. New refuses a driver below what this names (a
// LocalDurabilityError); cellb serve configures its drivers with it.
func Synchronous(o Ownership, mode durability.Mode) string {
	return synchronousNames[needSync(o, mode, "wal")]
}

// needSync is Synchronous as a level, for a driver in journal mode jm:
// NORMAL leaves a file consistent after a power loss only in WAL mode.
func needSync(o Ownership, mode durability.Mode, jm string) int64 {
	switch {
	case o == Fleet:
		return 0
	case jm != "wal":
		return 2
	case mode.SyncsLocal, o == SingleHost && mode.AcksFromBucket:
		return 1
	}
	return 2
}

// checkLocalSync opens a scratch database with the configured driver and
// checks its synchronous level against what the ownership mode needs
// (Synchronous): nothing in a fleet (the bucket wins, the local file is a
// cache); otherwise NORMAL in WAL mode under a mode that acknowledges from
// the bucket (single host) or syncs the file once per group commit, FULL
// otherwise. A program that copied a fleet's synchronous=OFF into a
// single-host node is refused instead of silently losing commits. A driver
// that cannot open a scratch database or answer the pragmas is not judged
// (warn says why): its first activation will fail on its own.
func checkLocalSync(ctx context.Context, cfg Config, warn func(msg string, args ...any)) error {
	if cfg.Ownership == Fleet {
		return nil
	}
	dir, err := os.MkdirTemp("", "cellb-sync-check-")
	if err != nil {
		return fmt.Errorf("host: checking the driver's synchronous setting: %w", err)
	}
	defer os.RemoveAll(dir)
	conn, err := cfg.Driver.Open(ctx, driver.Config{Path: filepath.Join(dir, "check.sqlite3")})
	if err != nil {
		warn("host: could not check the driver's synchronous setting", "err", err)
		return nil
	}
	defer conn.Close()
	level, err := pragmaValue(ctx, conn, "synchronous")
	if err == nil {
		var journal any
		journal, err = pragmaValue(ctx, conn, "journal_mode")
		if err == nil {
			return judgeLocalSync(cfg, level, journal)
		}
	}
	warn("host: could not check the driver's synchronous setting", "err", err)
	return nil
}

// judgeLocalSync compares the pragmas' answers with what cfg needs.
func judgeLocalSync(cfg Config, level, journal any) error {
	lvl, _ := level.(int64)
	jm := strings.ToLower(fmt.Sprint(journal))
	need, why := needSync(cfg.Ownership, cfg.Mode, jm), "every acknowledged commit must be on the local disk, and no durability mode syncs it"
	switch {
	case cfg.Ownership == SingleHost && cfg.Mode.AcksFromBucket:
		why = "the file must stay consistent after a power loss (the cell is then rebuilt from the bucket if it may lack acknowledged commits), which NORMAL guarantees only in WAL mode"
	case cfg.Mode.SyncsLocal:
		why = "the durability mode syncs the file once per group commit, which NORMAL leaves consistent only in WAL mode"
	}
	if lvl >= need {
		return nil
	}
	have := fmt.Sprint(level)
	if lvl >= 0 && int(lvl) < len(synchronousNames) {
		have = synchronousNames[lvl]
	}
	return &LocalDurabilityError{Ownership: cfg.Ownership, Have: have, Need: synchronousNames[need], Journal: jm, Why: why}
}

func pragmaValue(ctx context.Context, conn driver.Conn, name string) (any, error) {
	rows, err := conn.Query(ctx, "PRAGMA "+name)
	if err != nil {
		return nil, fmt.Errorf("host: PRAGMA %s: %w", name, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("host: PRAGMA %s: %w", name, err)
		}
		return nil, fmt.Errorf("host: PRAGMA %s returned no row", name)
	}
	v := rows.Values()[0]
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	return v, rows.Err()
}
