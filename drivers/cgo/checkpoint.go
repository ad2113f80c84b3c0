//go:build cgo

package cgo

import (
	"context"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// Checkpoint copies the WAL into the database file. Modes other than
// passive fail with a SQLITE_BUSY error when another connection keeps
// the checkpoint from completing. With page capture, the commits in the
// WAL have always been read before it is checkpointed.
func (c *conn) Checkpoint(ctx context.Context, mode driver.CheckpointMode) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	if c.cap != nil && c.cap.dirty() {
		// A commit is still unread (the WAL could not be read): a
		// checkpoint could let SQLite overwrite its frames.
		return c.cap.err
	}
	return c.checkpoint(mode)
}

func (c *conn) checkpoint(mode driver.CheckpointMode) error {
	var name string
	switch mode {
	case driver.CheckpointPassive:
		name = "PASSIVE"
	case driver.CheckpointFull:
		name = "FULL"
	case driver.CheckpointRestart:
		name = "RESTART"
	case driver.CheckpointTruncate:
		name = "TRUNCATE"
	default:
		return fmt.Errorf("cgo: unknown checkpoint mode %d", int(mode))
	}
	row, err := c.internalQuery("PRAGMA wal_checkpoint(" + name + ")")
	if err != nil {
		return err
	}
	if busy, _ := row[0].(int64); busy != 0 && mode != driver.CheckpointPassive {
		return &driver.SQLiteError{Code: driver.CodeBusy, ExtendedCode: driver.CodeBusy,
			Msg: "checkpoint (" + name + ") could not complete: another connection is using the database"}
	}
	return nil
}
