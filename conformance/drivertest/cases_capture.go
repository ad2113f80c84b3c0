package drivertest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cellb/cellb/core/driver"
)

// captureCases check page capture: the declaration matches the
// connection, and under every kind of write the captured commits replay
// exactly onto the previous image.
func captureCases() []caseDef {
	return []caseDef{
		{"capture/declared", caseCaptureDeclared},
		{"capture/commit-time", caseCaptureCommitTime},
		{"capture/workload", caseCaptureWorkload},
		{"capture/bulk", caseCaptureBulk},
		{"capture/rollback", caseCaptureRollback},
		{"capture/restore-resets", caseCaptureRestoreResets},
		{"capture/page-sizes", caseCapturePageSizes},
		{"capture/memory", caseCaptureMemory},
		{"capture/held-pages", caseCaptureHeldPages},
	}
}

func (c *checkT) needCapture() {
	if !c.caps.PageCapture {
		c.skip("the driver does not declare PageCapture")
	}
}

func caseCaptureDeclared(c *checkT) {
	conn := c.open(c.path("declared.db"), true)
	pc, ok := conn.(driver.PageCapturer)
	if c.caps.PageCapture {
		if !ok {
			c.fatalf("the driver declares PageCapture but a Conn opened with PageCapture does not implement driver.PageCapturer")
		}
		if _, err := pc.TakeCommits(c.ctx); err != nil {
			c.errorf("TakeCommits on a fresh capturing Conn: %v", err)
		}
		return
	}
	if ok {
		commits, err := pc.TakeCommits(c.ctx)
		if !errors.Is(err, driver.ErrUnsupported) {
			c.errorf("the driver does not declare PageCapture, yet its Conn implements PageCapturer and TakeCommits returns (%d commits, %v) instead of driver.ErrUnsupported", len(commits), err)
		}
	}
	// PageCapture is ignored by drivers without the capability.
	c.exec(conn, "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
}

// caseCaptureCommitTime makes several commits that change the same pages
// and takes them together, snapshotting after each: every commit must carry
// its pages as they were when it committed, not as they are now.
func caseCaptureCommitTime(c *checkT) {
	c.needCapture()
	w := newCapWorkload(c, c.path("commit-time.db"))
	w.snapshot = true
	w.insertTx()
	for range 3 {
		w.updateAuto()
		w.insertAuto()
	}
	w.verify()
	w.snapshot = true
	w.updateTx()
	w.deleteAuto()
	w.updateTx()
	w.verify()

	// Taking commits while a transaction is open (one large enough to
	// spill pages before it commits) reports only what had committed.
	w.snapshot = false
	w.insertAuto()
	committed := c.serialize(w.conn)
	w.exec("PRAGMA cache_size = 10")
	c.begin(w.conn)
	var added []int64
	for range 400 {
		added = append(added, w.insertRow())
	}
	commits, err := w.pc.TakeCommits(c.ctx)
	if err != nil {
		c.fatalf("TakeCommits inside a transaction: %v", err)
	}
	if err := verifyCommits(w.ps, w.base, commits, nil, committed); err != nil {
		c.fatalf("TakeCommits inside an open transaction: %v", err)
	}
	w.base = committed
	c.commit(w.conn)
	w.live = append(w.live, added...)
	w.ops, w.maxCommits = []string{"transaction taken across"}, 1
	w.verify()
}

func caseCaptureWorkload(c *checkT) {
	c.needCapture()
	w := newCapWorkload(c, c.path("workload.db"))
	w.run(c.h.Steps)
}

func caseCaptureBulk(c *checkT) {
	c.needCapture()
	w := newCapWorkload(c, c.path("bulk.db"))
	w.exec("CREATE TABLE bulk(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)")
	w.done("create bulk", 1)
	w.verify()

	c.begin(w.conn)
	for i := range c.h.BulkRows {
		w.exec("INSERT INTO bulk(id, a, b) VALUES (?, ?, ?)", i, c.rng.Int64(), randTag(c.rng))
	}
	c.commit(w.conn)
	commits, err := w.pc.TakeCommits(c.ctx)
	if err != nil {
		c.fatalf("TakeCommits after %d rows in one transaction: %v", c.h.BulkRows, err)
	}
	if len(commits) != 1 {
		c.errorf("one transaction of %d rows was reported as %d commits, want 1", c.h.BulkRows, len(commits))
	}
	w.check("one transaction of many rows", commits, c.serialize(w.conn))
	grown := len(w.base) / w.ps
	c.logf("%d rows in one transaction: %d pages", c.h.BulkRows, grown)

	// Shrink: delete most rows, then VACUUM.
	w.exec("DELETE FROM bulk WHERE id % 10 <> 0")
	w.done("delete 90%", 1)
	w.exec("VACUUM")
	w.done("vacuum", 1)
	w.verify()
	if shrunk := len(w.base) / w.ps; shrunk >= grown {
		c.errorf("after deleting 90%% of the rows and VACUUM the database has %d pages, it had %d: it should have shrunk", shrunk, grown)
	}
}

func caseCaptureRollback(c *checkT) {
	c.needCapture()
	w := newCapWorkload(c, c.path("rollback.db"))
	for range 20 {
		w.insertTx()
	}
	w.verify()
	w.exec("PRAGMA cache_size = 10") // make large transactions spill
	w.done("cache-size", 0)
	w.verify()

	steps := []struct {
		name string
		fn   func()
	}{
		{"small rollback", func() {
			c.begin(w.conn)
			w.insertRow()
			w.bumpMeta()
			c.rollback(w.conn)
		}},
		{"rollback of a transaction larger than the page cache", func() {
			c.begin(w.conn)
			for range 2000 {
				w.insertRow()
			}
			w.exec("DELETE FROM kv WHERE k % 2 = 0")
			c.rollback(w.conn)
		}},
		{"rollback by SQL", func() {
			w.exec("BEGIN; INSERT INTO kv(tag) VALUES ('x'); UPDATE meta SET n = -1")
			w.exec("ROLLBACK")
		}},
		{"rollback forced by a failed statement (OR ROLLBACK)", func() {
			c.begin(w.conn)
			w.insertRow()
			if _, err := w.conn.Exec(c.ctx, "INSERT OR ROLLBACK INTO kv(k) VALUES (?)", w.live[0]); err == nil {
				c.fatalf("INSERT OR ROLLBACK of a duplicate key succeeded")
			}
			if w.conn.InTransaction() {
				c.errorf("a statement that failed with OR ROLLBACK left the transaction open")
				c.rollback(w.conn)
			}
		}},
		{"rollback of a schema change", func() {
			c.begin(w.conn)
			w.exec("CREATE TABLE gone(x); CREATE INDEX gone_x ON gone(x); DROP TABLE meta")
			c.rollback(w.conn)
		}},
	}
	for _, s := range steps {
		s.fn()
		commits, err := w.pc.TakeCommits(c.ctx)
		if err != nil {
			c.fatalf("TakeCommits after %s: %v", s.name, err)
		}
		if len(commits) != 0 {
			c.errorf("%s yielded %d commits, want none", s.name, len(commits))
		}
		w.check(s.name, commits, c.serialize(w.conn))
	}
	// A commit after a large rollback reuses the space the rollback
	// touched (WAL frames, file pages): it must still replay exactly.
	c.begin(w.conn)
	for range 2000 {
		w.insertRow()
	}
	c.rollback(w.conn)
	w.done("large rollback", 0)
	w.insertTx()
	w.verify()
}

func caseCaptureRestoreResets(c *checkT) {
	c.needCapture()
	w := newCapWorkload(c, c.path("restore.db"))
	for range 5 {
		w.insertTx()
	}
	w.verify()
	early := w.base
	for range 10 {
		w.insertTx()
		w.updateTx()
	}
	w.verify()
	w.history = [][]byte{early}
	for range 3 {
		w.restoreEarlier()
		w.insertTx()
		w.deleteTx()
		w.verify()
		w.history = [][]byte{early}
	}
	// An image from another database, possibly larger.
	other := c.open(c.path("other.db"), false)
	c.fill(other, 400)
	c.exec(other, "CREATE TABLE meta(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO meta VALUES (1, 0)")
	w.history = [][]byte{c.serialize(other)}
	w.restoreEarlier()
	w.insertTx()
	w.verify()
}

// caseCapturePageSizes restores images with the smallest-but-one and the
// largest page sizes (a cell restored from a bucket keeps whatever page
// size it was created with) and captures a workload on each.
func caseCapturePageSizes(c *checkT) {
	c.needCapture()
	for _, ps := range []int{1024, 65536} {
		src := c.open("", false)
		c.exec(src, fmt.Sprintf("PRAGMA page_size = %d", ps))
		c.fill(src, 60)
		c.exec(src, "CREATE TABLE meta(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO meta VALUES (1, 0)")
		if got := c.pageSize(src); got != ps {
			c.fatalf("an in-memory database given PRAGMA page_size = %d before its first write has PageSize %d", ps, got)
		}
		img := c.serialize(src)
		c.close(src)
		w := newCapWorkload(c, c.path(fmt.Sprintf("ps%d.db", ps)))
		w.history = [][]byte{img}
		w.restoreEarlier()
		if w.ps != ps {
			c.fatalf("after restoring an image with %d-byte pages, PageSize is %d", ps, w.ps)
		}
		for range 8 {
			w.randomStep()
		}
		c.close(w.conn)
	}
}

func caseCaptureMemory(c *checkT) {
	c.needCapture()
	conn, err := c.h.Driver.Open(c.ctx, driver.Config{PageCapture: true})
	if err != nil {
		if err.Error() == "" {
			c.errorf("Open(Path \"\", PageCapture) failed with an empty error message")
		}
		c.skip("in-memory databases refuse page capture: %v", err)
	}
	conn.Close()
	w := newCapWorkload(c, "")
	w.run(min(c.h.Steps, 15))
}

// caseCaptureHeldPages holds some commits' pages while the connection goes
// on committing and the caller releases other commits (a durability log
// keeps a commit queued until its upload, across many later commits):
// held pages must keep their commit-time bytes until released.
func caseCaptureHeldPages(c *checkT) {
	c.needCapture()
	w := newCapWorkload(c, c.path("held-pages.db"))
	type heldCommit struct {
		step   int
		commit driver.CapturedCommit
		copies [][]byte
	}
	var held []heldCommit
	for step := range 40 {
		switch step % 4 {
		case 0:
			w.insertTx()
		case 1:
			w.updateAuto()
			w.insertAuto()
		case 2:
			w.updateTx()
		default:
			w.deleteAuto()
		}
		if step == 20 {
			w.checkpoint() // the log restarts under the held pages
		}
		commits := w.verifyKeep()
		for i := range commits {
			if step%3 != 0 {
				commits[i].Release()
				continue
			}
			h := heldCommit{step: step, commit: commits[i]}
			for _, p := range commits[i].Pages {
				h.copies = append(h.copies, bytes.Clone(p.Data))
			}
			held = append(held, h)
		}
	}
	if len(held) == 0 {
		c.fatalf("no commit was captured to hold")
	}
	for _, h := range held {
		for j, p := range h.commit.Pages {
			if !bytes.Equal(p.Data, h.copies[j]) {
				c.fatalf("page %d of a commit taken at step %d changed while the caller held it (before Release): the driver reused a buffer it had handed out", p.Pgno, h.step)
			}
		}
		h.commit.Release()
	}
}
