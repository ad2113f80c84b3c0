package drivertest

import (
	"bytes"
	"errors"
	"os"

	"github.com/cellb/cellb/core/driver"
)

// checkpointCases check WAL checkpoints: declared means WAL mode and a
// working Checkpointer that changes neither content nor capture.
func checkpointCases() []caseDef {
	return []caseDef{
		{"checkpoint/declared", caseCheckpointDeclared},
		{"checkpoint/modes", caseCheckpointModes},
	}
}

func caseCheckpointDeclared(c *checkT) {
	conn := c.open(c.path("declared.db"), c.caps.PageCapture)
	c.exec(conn, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
	cp, ok := conn.(driver.Checkpointer)
	if c.caps.Checkpoint {
		if !ok {
			c.fatalf("the driver declares Checkpoint but its Conn does not implement driver.Checkpointer")
		}
		if mode := c.queryOne(conn, "PRAGMA journal_mode"); mode != "wal" {
			c.errorf("the driver declares Checkpoint (WAL mode), but journal_mode is %v", mode)
		}
		return
	}
	if ok {
		if err := cp.Checkpoint(c.ctx, driver.CheckpointPassive); !errors.Is(err, driver.ErrUnsupported) {
			c.errorf("the driver does not declare Checkpoint, yet its Conn implements Checkpointer and Checkpoint returns %v instead of driver.ErrUnsupported", err)
		}
	}
}

func caseCheckpointModes(c *checkT) {
	if !c.caps.Checkpoint {
		c.skip("the driver does not declare Checkpoint")
	}
	path := c.path("modes.db")
	capture := c.caps.PageCapture
	conn := c.open(path, capture)
	cp, ok := conn.(driver.Checkpointer)
	if !ok {
		c.fatalf("the driver declares Checkpoint but its Conn does not implement driver.Checkpointer")
	}
	var pc driver.PageCapturer
	base := c.serialize(conn)
	if capture {
		if pc, ok = conn.(driver.PageCapturer); !ok {
			c.fatalf("the driver declares PageCapture but a Conn opened with PageCapture does not implement driver.PageCapturer")
		}
		if _, err := pc.TakeCommits(c.ctx); err != nil {
			c.fatalf("TakeCommits: %v", err)
		}
		base = c.serialize(conn)
	}
	modes := []struct {
		mode driver.CheckpointMode
		name string
	}{
		{driver.CheckpointPassive, "PASSIVE"}, {driver.CheckpointFull, "FULL"},
		{driver.CheckpointRestart, "RESTART"}, {driver.CheckpointTruncate, "TRUNCATE"},
	}
	for round, m := range modes {
		// Commits made before the checkpoint and not yet taken.
		c.fill(conn, 50+50*round)
		want := c.serialize(conn)
		content := c.dump(conn)
		if err := cp.Checkpoint(c.ctx, m.mode); err != nil {
			c.errorf("Checkpoint(%s): %v", m.name, err)
			continue
		}
		if got := c.serialize(conn); !bytes.Equal(got, want) {
			c.errorf("Checkpoint(%s) changed the image: %s", m.name, describeDiff(got, want))
		}
		if d := diffDumps(c.dump(conn), content); d != "" {
			c.errorf("Checkpoint(%s) changed the content: %s", m.name, d)
		}
		if m.mode == driver.CheckpointTruncate {
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
				c.errorf("after Checkpoint(TRUNCATE) the WAL file holds %d bytes, want 0", fi.Size())
			}
		}
		if capture {
			commits, err := pc.TakeCommits(c.ctx)
			if err != nil {
				c.fatalf("TakeCommits after Checkpoint(%s): %v", m.name, err)
			}
			if err := verifyCommits(c.pageSize(conn), base, commits, nil, want); err != nil {
				c.errorf("commits made before Checkpoint(%s), taken after it: %v", m.name, err)
			}
			base = want
		}
	}
}
