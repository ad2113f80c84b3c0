package modernc

import (
	"context"
	"fmt"
	"testing"

	"github.com/cellb/cellb/core/driver"
	"modernc.org/libc"
)

// TestNoCMemoryLeaks runs every operation of the binding many times and
// checks that libc's allocator ends where it started: every C allocation
// freed, every statement finalized, every session deleted. The allocator
// counts only when built with the memory.counters tag:
//
//	go test -tags memory.counters -run NoCMemoryLeaks github.com/cellb/cellb/drivers/modernc
func TestNoCMemoryLeaks(t *testing.T) {
	cycle := func(path string) {
		ctx := context.Background()
		dc, err := New(Options{}).Open(ctx, driver.Config{Path: path, PageCapture: path != ""})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := dc.(*Conn)
		if cc, ok := dc.(*CapturingConn); ok {
			c = cc.Conn
		}
		defer c.Close()
		mustExec(t, c, "CREATE TABLE t(k INTEGER PRIMARY KEY, s TEXT, b BLOB)")
		s, err := c.StartSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			mustExec(t, c, "INSERT INTO t(s, b) VALUES (?, ?); UPDATE t SET s = 'x' WHERE k = 1", "text", []byte("blob"))
			mustExec(t, c, "UPDATE t SET s = ? WHERE k = ?", "", i)
		}
		queryAll(t, c, "SELECT * FROM t")
		r, _ := c.Query(ctx, "SELECT * FROM t") // closed early
		r.Next()
		r.Close()
		c.Exec(ctx, "SELECT nope")                       // a failing prepare
		c.Exec(ctx, "INSERT INTO t VALUES (?, ?, ?)", 1) // an argument mismatch
		cs, err := s.Changeset()
		if err != nil {
			t.Fatal(err)
		}
		img := serializeT(t, c)
		c.SetAuthorizer(func(driver.Action, string, string, string, string) driver.AuthResult { return driver.AuthOK })
		if err := c.Restore(ctx, img); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "DELETE FROM t")
		if err := c.ApplyChangeset(ctx, cs); err != nil {
			t.Fatal(err)
		}
		c.ApplyChangeset(ctx, cs) // conflicts
		c.Restore(ctx, []byte("SQLite format 3\x00 but not really a database, and far too short"))
		if cc, ok := dc.(*CapturingConn); ok {
			cc.TakeCommits(ctx)
		}
		c.Checkpoint(ctx, driver.CheckpointTruncate)
		s.Close()
		r, _ = c.Query(ctx, "SELECT * FROM t") // left open: Close must finalize it
		r.Next()
	}
	dir := t.TempDir()
	for _, file := range []bool{false, true} {
		n := 0
		path := func() string {
			if !file {
				return ""
			}
			n++
			return fmt.Sprintf("%s/db%d", dir, n)
		}
		cycle(path()) // warm up SQLite's process-wide state
		before := libc.MemStat()
		if before.Allocs == 0 {
			t.Skip("libc's allocator keeps no counts; build with -tags memory.counters")
		}
		for range 5 {
			cycle(path())
		}
		if after := libc.MemStat(); after.Allocs != before.Allocs || after.Bytes != before.Bytes {
			t.Errorf("file=%v: C allocations went from %d (%d bytes) to %d (%d bytes)", file, before.Allocs, before.Bytes, after.Allocs, after.Bytes)
		}
	}
}
