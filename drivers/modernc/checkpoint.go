package modernc

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
	sqlite3 "modernc.org/sqlite/lib"
)

// Checkpoint copies WAL frames into the database file (SQLite's
// sqlite3_wal_checkpoint_v2 with the matching mode). On a capturing
// connection every commit is read from the WAL first, so no checkpoint
// takes frames the log has not seen. An in-memory database has no WAL:
// there it does nothing.
func (c *Conn) Checkpoint(ctx context.Context, mode driver.CheckpointMode) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	var m int32
	switch mode {
	case driver.CheckpointPassive:
		m = sqlite3.SQLITE_CHECKPOINT_PASSIVE
	case driver.CheckpointFull:
		m = sqlite3.SQLITE_CHECKPOINT_FULL
	case driver.CheckpointRestart:
		m = sqlite3.SQLITE_CHECKPOINT_RESTART
	case driver.CheckpointTruncate:
		m = sqlite3.SQLITE_CHECKPOINT_TRUNCATE
	default:
		return fmt.Errorf("modernc: unknown checkpoint mode %d", mode)
	}
	if c.path == "" {
		return nil
	}
	return c.checkpoint(m)
}

// checkpoint reads pending commits (when capturing), then checkpoints.
func (c *Conn) checkpoint(mode int32) error {
	if c.wal != nil {
		if c.dataVersion() != c.wal.readAt {
			c.wal.read(c, 0)
		}
		if err := c.wal.freshError(); err != nil {
			return err
		}
	}
	return c.checkpointRaw(mode)
}

// checkpointRaw runs sqlite3_wal_checkpoint_v2 on the main database. Modes
// past PASSIVE fail with SQLITE_BUSY when they cannot finish (an open
// transaction or statement on this connection).
func (c *Conn) checkpointRaw(mode int32) error {
	out := c.tls.Alloc(8)
	defer c.tls.Free(8)
	if c.wal != nil {
		c.wal.header = nil // the log may restart: read its header afresh
	}
	rc := sqlite3.Xsqlite3_wal_checkpoint_v2(c.tls, c.db, c.zMain, mode, out, out+4)
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("modernc: checkpoint: %w", sqliteError(c.tls, c.db, rc))
	}
	return nil
}
