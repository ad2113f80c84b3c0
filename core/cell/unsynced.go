package cell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/atomicfile"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
)

// restartMark is how a single-host cell on a log that acknowledges from
// the bucket (durability.BucketAcker) avoids syncing its local file per
// commit. SQLite runs in WAL mode with synchronous=NORMAL, so the file is
// always consistent but may lack its newest commits after a machine
// restart (a power loss or an OS crash: the only events that lose writes
// still in the page cache; a killed process loses none). Every
// acknowledged commit is in the bucket, so the file is not needed to keep
// them, only to know whether it may lack one:
//
//   - before the activation's first acknowledgement, a mark beside the
//     database ("<db>-unsynced") names the current boot; it is created and
//     its directory fsynced once per activation, beside the first group's
//     upload (the log calls record as its OpenRequest.SyncLocal);
//   - a clean close syncs the database's files and removes the mark;
//   - an activation that finds a mark naming another boot (or one it
//     cannot read) restores the cell from the bucket when the bucket holds
//     it, and otherwise keeps the file with a warning.
//
// Only the mark's existence needs to survive a restart: its content is
// written without a sync, and content that does not name the current boot
// (old, torn or empty) sends the cell to the bucket, which is never wrong.
type restartMark struct {
	path string // the database file
	boot string // this boot's identity; "" syncs the file per group commit instead

	mu      sync.Mutex
	present bool // a mark is on disk: a clean close syncs the file and removes it
	current bool // the mark names this boot and is durable: nothing to record
}

// unsyncedMarkPath is the mark beside a database file (the database's own
// suffixes are "-wal", "-shm" and "-journal"; it does not end in
// ".sqlite3", so the alarm scan passes it by).
func unsyncedMarkPath(dbPath string) string { return dbPath + "-unsynced" }

// readUnsyncedMark reports whether a mark exists and the boot it names
// ("" when it names none).
func readUnsyncedMark(dbPath string) (bool, string, error) {
	data, err := os.ReadFile(unsyncedMarkPath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return true, strings.TrimSpace(string(data)), nil
}

// load reads the mark an activation finds and reports whether it is stale:
// it names another boot, or none. A mark naming this boot (the process
// was killed, or the cell reset, since it was written) needs no new one.
func (m *restartMark) load() (stale bool, err error) {
	present, boot, err := readUnsyncedMark(m.path)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.present = present
	m.current = present && m.boot != "" && boot == m.boot
	return present && !m.current, nil
}

// claim rewrites a stale mark for this boot without a sync: its existence
// is already durable (it survived the restart), so a restart during this
// activation finds it again, whatever its content then. Without a boot
// identity the stale mark stays as it is until a clean close.
func (m *restartMark) claim() error {
	if m.boot == "" {
		return nil
	}
	if err := os.WriteFile(unsyncedMarkPath(m.path), []byte(m.boot+"\n"), 0o644); err != nil {
		return err
	}
	m.mu.Lock()
	m.current = true
	m.mu.Unlock()
	return nil
}

// isCurrent reports whether the mark already names this boot.
func (m *restartMark) isCurrent() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// record makes the mark exist durably, naming this boot, once per
// activation: the log calls it once per group commit, beside the group's
// upload, and acknowledges the group only after it returns.
func (m *restartMark) record() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current {
		return nil
	}
	if err := os.WriteFile(unsyncedMarkPath(m.path), []byte(m.boot+"\n"), 0o644); err != nil {
		return err
	}
	m.present = true
	if err := atomicfile.SyncDir(filepath.Dir(m.path)); err != nil {
		return err
	}
	m.current = true
	return nil
}

// clear ends the activation cleanly: every commit the file holds is made
// durable on the local disk, then the mark goes (a removal lost in a
// restart costs one restore from the bucket, never a commit).
func (m *restartMark) clear() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.present {
		return nil
	}
	if err := durability.SyncDatabaseFiles(m.path); err != nil {
		return err
	}
	if err := os.Remove(unsyncedMarkPath(m.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	m.present, m.current = false, false
	return nil
}

// checkRestartMark sets up the restart mark of a single-host cell (a
// grant with epochs whose bucket does not win) on a log that acknowledges
// from the bucket, and acts on a stale one: the local file may lack
// acknowledged commits, so it is discarded for the bucket's newest state
// when the bucket holds the cell, and kept with a warning otherwise. Other
// cells get no mark: a fleet's bucket always wins, and without ownership
// (lease.None) the local file is the primary copy.
func (inst *instance) checkRestartMark(ctx context.Context, grant lease.Grant, path string) error {
	rt := inst.rt
	inst.db.restart = nil
	if grant.BucketWins() || grant.Epoch() == 0 || inst.db.localLog || !durability.AcksFromBucket(rt.log) {
		return nil
	}
	m := &restartMark{path: path, boot: rt.boot}
	inst.db.restart = m
	stale, err := m.load()
	if err != nil || !stale {
		return err
	}
	held := false
	if p, ok := rt.log.(durability.Prober); ok {
		if held, err = p.Holds(ctx, inst.key); err != nil {
			return fmt.Errorf("look for the cell in the log: %w", err)
		}
	}
	if held {
		rt.logger.Info("cell: the local database may lack acknowledged commits (written before a machine restart): restoring the cell from the bucket", "cell", inst.key)
		// Discarded before the mark is claimed: until then a failure
		// leaves the stale mark, and the next activation discards again.
		if err := discardDatabase(path); err != nil {
			return err
		}
	} else {
		rt.logger.Warn("cell: the local database may lack acknowledged commits (written before a machine restart), but the bucket holds nothing for the cell: keeping the local database", "cell", inst.key)
	}
	if err := m.claim(); err != nil {
		return fmt.Errorf("cell: claim the restart mark: %w", err)
	}
	return nil
}
