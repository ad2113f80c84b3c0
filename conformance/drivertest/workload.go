package drivertest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// capWorkload drives a capturing connection through seeded random steps
// and checks, after each step, that the captured commits replay onto the
// previous image to give Serialize() — and, in steps that take snapshots,
// pass through the image serialized after every committing operation,
// which catches pages read after commit time.
type capWorkload struct {
	c      *checkT
	path   string // "" for an in-memory database
	conn   driver.Conn
	pc     driver.PageCapturer
	cp     driver.Checkpointer // nil unless the driver declares Checkpoint
	ps     int
	base   []byte // the image as of the previous TakeCommits
	step   int
	shrunk int // VACUUMs that reduced the page count

	// The model of what the database holds, re-read after restores.
	live     []int64
	nextKey  int64
	tables   []string
	indexes  []string
	nextName int
	history  [][]byte // earlier images, for restores

	// Per step.
	snapshot   bool
	snaps      [][]byte
	maxCommits int
	ops        []string
}

func newCapWorkload(c *checkT, path string) *capWorkload {
	w := &capWorkload{c: c, path: path}
	w.open()
	w.exec("CREATE TABLE kv(k INTEGER PRIMARY KEY, tag TEXT, v BLOB)")
	w.done("create kv", 1)
	w.exec("CREATE TABLE meta(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO meta VALUES (1, 0)")
	w.done("create meta", 2)
	w.verify()
	return w
}

// open opens (or reopens) the database and takes its image as the base.
func (w *capWorkload) open() {
	c := w.c
	w.conn = c.open(w.path, true)
	pc, ok := w.conn.(driver.PageCapturer)
	if !ok {
		c.fatalf("the driver declares PageCapture but a Conn opened with PageCapture does not implement driver.PageCapturer")
	}
	w.pc = pc
	w.cp = nil
	if cp, ok := w.conn.(driver.Checkpointer); ok && c.caps.Checkpoint {
		w.cp = cp
	}
	w.ps = c.pageSize(w.conn)
	w.base = c.serialize(w.conn)
	// Commits the driver made while opening (e.g. choosing its journal
	// mode) may be reported; they must not change the image.
	commits, err := w.pc.TakeCommits(c.ctx)
	if err != nil {
		c.fatalf("TakeCommits right after Open: %v", err)
	}
	w.check("right after Open", commits, w.c.serialize(w.conn))
	w.resync()
}

// resync re-reads the model from the database (after Open or Restore).
func (w *capWorkload) resync() {
	c := w.c
	w.live = w.live[:0]
	w.tables, w.indexes = nil, nil
	if len(c.query(w.conn, "SELECT 1 FROM sqlite_schema WHERE name = 'kv'")) == 0 {
		return
	}
	for _, r := range c.query(w.conn, "SELECT k FROM kv ORDER BY k") {
		k := r[0].(int64)
		w.live = append(w.live, k)
		w.nextKey = max(w.nextKey, k+1)
	}
	for _, r := range c.query(w.conn, "SELECT type, name FROM sqlite_schema WHERE name LIKE 'w\\_%' ESCAPE '\\' ORDER BY name") {
		switch r[0] {
		case "table":
			w.tables = append(w.tables, r[1].(string))
		case "index":
			w.indexes = append(w.indexes, r[1].(string))
		}
	}
}

func (w *capWorkload) exec(sql string, args ...any) driver.Result {
	return w.c.exec(w.conn, sql, args...)
}

// done records a finished operation that made at most n commits, and
// snapshots the image if this step takes snapshots.
func (w *capWorkload) done(op string, n int) {
	w.ops = append(w.ops, op)
	w.maxCommits += n
	if n > 0 && w.snapshot {
		w.snaps = append(w.snaps, w.c.serialize(w.conn))
	}
}

// verify takes the step's commits, checks them and releases them, as a
// durability log does once it has encoded them: later steps then run on
// recycled buffers, which catches a driver that keeps writing into a
// buffer it handed out.
func (w *capWorkload) verify() {
	commits := w.verifyKeep()
	for i := range commits {
		commits[i].Release()
	}
}

// verifyKeep is verify without the release: the caller holds the commits.
func (w *capWorkload) verifyKeep() []driver.CapturedCommit {
	c := w.c
	commits, err := w.pc.TakeCommits(c.ctx)
	if err != nil {
		c.fatalf("TakeCommits after step %d: %v", w.step, err)
	}
	now := c.serialize(w.conn)
	label := fmt.Sprintf("step %d [%s]", w.step, strings.Join(w.ops, ", "))
	if len(commits) > w.maxCommits {
		c.errorf("%s: TakeCommits returned %d commits, but the step made at most %d (rolled-back work and checkpoints are not commits)", label, len(commits), w.maxCommits)
	}
	w.check(label, commits, now)
	if len(w.history) < 6 || w.c.rng.IntN(4) == 0 {
		if len(w.history) == 6 {
			w.history = slices.Delete(w.history, 0, 1)
		}
		w.history = append(w.history, now)
	}
	w.step++
	w.snaps, w.maxCommits, w.ops = nil, 0, nil
	return commits
}

// check applies the structural and replay checks to a batch of commits.
func (w *capWorkload) check(label string, commits []driver.CapturedCommit, now []byte) {
	c := w.c
	if len(commits) > 0 {
		if last := commits[len(commits)-1].PageCount; int64(last)*int64(w.ps) != int64(len(now)) {
			c.errorf("%s: the last commit's PageCount is %d, but the database has %d pages", label, last, len(now)/w.ps)
		}
	}
	if err := verifyCommits(w.ps, w.base, commits, w.snaps, now); err != nil {
		c.fatalf("%s: %v", label, err)
	}
	w.base = now
}

// run performs steps random steps.
func (w *capWorkload) run(steps int) {
	for range steps {
		w.randomStep()
	}
	w.c.logf("%d steps; database ended at %d pages; %d VACUUMs shrank it", w.step, len(w.base)/max(w.ps, 1), w.shrunk)
}

func (w *capWorkload) randomStep() {
	r := w.c.rng
	switch x := r.IntN(100); {
	case x < 5 && w.path != "":
		w.reopen()
		return
	case x < 10 && len(w.history) > 0:
		w.restoreEarlier()
		return
	}
	w.snapshot = r.IntN(2) == 0
	for n := 1 + r.IntN(4); n > 0; n-- {
		w.randomOp()
	}
	w.verify()
}

// randomOp runs one operation, weighted; large databases lean to deletes.
func (w *capWorkload) randomOp() {
	r := w.c.rng
	ops := []struct {
		weight int
		fn     func()
	}{
		{10, w.insertTx}, {6, w.insertAuto}, {3, w.insertReturning}, {3, w.insertMultiAuto},
		{8, w.updateTx}, {4, w.updateAuto}, {3, w.updateMany},
		{6, w.deleteTx}, {4, w.deleteAuto},
		{2, w.createIndex}, {2, w.dropIndex}, {2, w.createTable}, {2, w.dropTable}, {1, w.alterTable},
		{2, w.vacuum}, {2, w.shrink}, {2, w.bigTx},
		{5, w.rollbackTx}, {4, w.savepointRolledBackInTx}, {2, w.savepointOuterRolledBack}, {2, w.savepointReleased},
		{3, w.sqlTx}, {3, w.checkpoint}, {2, w.cacheSize},
	}
	if len(w.live) > 1500 {
		w.deleteTx()
		return
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	pick := r.IntN(total)
	for _, o := range ops {
		if pick < o.weight {
			o.fn()
			return
		}
		pick -= o.weight
	}
}

// blobSize picks mostly small values, some filling half a page, and some
// spilling to overflow pages.
func (w *capWorkload) blobSize() int {
	r := w.c.rng
	switch x := r.IntN(10); {
	case x < 5:
		return r.IntN(100)
	case x < 8:
		return 100 + r.IntN(w.ps/2)
	default:
		return w.ps + r.IntN(3*w.ps)
	}
}

func (w *capWorkload) insertRow() int64 {
	k := w.nextKey
	w.nextKey++
	w.exec("INSERT INTO kv(k, tag, v) VALUES (?, ?, ?)", k, randTag(w.c.rng), randBytes(w.c.rng, w.blobSize()))
	return k
}

func (w *capWorkload) bumpMeta() { w.exec("UPDATE meta SET n = n + 1 WHERE id = 1") }

// pickLive returns up to n distinct live keys.
func (w *capWorkload) pickLive(n int) []int64 {
	if n > len(w.live) {
		n = len(w.live)
	}
	idx := w.c.rng.Perm(len(w.live))[:n]
	keys := make([]int64, n)
	for i, j := range idx {
		keys[i] = w.live[j]
	}
	return keys
}

func (w *capWorkload) forget(keys []int64) {
	w.live = slices.DeleteFunc(w.live, func(k int64) bool { return slices.Contains(keys, k) })
}

func (w *capWorkload) insertTx() {
	w.c.begin(w.conn)
	var added []int64
	for n := 1 + w.c.rng.IntN(40); n > 0; n-- {
		added = append(added, w.insertRow())
	}
	w.bumpMeta()
	w.c.commit(w.conn)
	w.live = append(w.live, added...)
	w.done("insert-tx", 1)
}

func (w *capWorkload) insertAuto() {
	w.live = append(w.live, w.insertRow())
	w.done("insert-autocommit", 1)
}

func (w *capWorkload) insertReturning() {
	c := w.c
	k := w.nextKey
	w.nextKey++
	rows := c.query(w.conn, "INSERT INTO kv(k, tag, v) VALUES (?, ?, ?) RETURNING k", k, randTag(c.rng), randBytes(c.rng, w.blobSize()))
	if len(rows) != 1 || rows[0][0] != k {
		c.errorf("INSERT ... RETURNING k through Query returned %v, want [[%d]]", rows, k)
	}
	w.live = append(w.live, k)
	w.done("insert-returning-query", 1)
}

func (w *capWorkload) insertMultiAuto() {
	k := w.nextKey
	w.nextKey += 2
	w.exec("INSERT INTO kv(k, tag, v) VALUES (?, 'multi', ?); INSERT INTO kv(k, tag) VALUES ("+fmt.Sprint(k+1)+", 'multi')", k, randBytes(w.c.rng, w.blobSize()))
	w.live = append(w.live, k, k+1)
	w.done("two-autocommit-statements", 2)
}

func (w *capWorkload) updateTx() {
	w.c.begin(w.conn)
	for _, k := range w.pickLive(1 + w.c.rng.IntN(20)) {
		w.exec("UPDATE kv SET tag = ?, v = ? WHERE k = ?", randTag(w.c.rng), randBytes(w.c.rng, w.blobSize()), k)
	}
	w.bumpMeta()
	w.c.commit(w.conn)
	w.done("update-tx", 1)
}

func (w *capWorkload) updateAuto() {
	w.bumpMeta()
	w.done("update-autocommit", 1)
}

func (w *capWorkload) updateMany() {
	m := 2 + w.c.rng.IntN(5)
	w.exec("UPDATE kv SET tag = ? WHERE k % ? = ?", randTag(w.c.rng), m, w.c.rng.IntN(m))
	w.done("update-many-autocommit", 1)
}

func (w *capWorkload) deleteTx() {
	w.c.begin(w.conn)
	keys := w.pickLive(1 + w.c.rng.IntN(max(1, len(w.live)/3)))
	for _, k := range keys {
		w.exec("DELETE FROM kv WHERE k = ?", k)
	}
	w.bumpMeta()
	w.c.commit(w.conn)
	w.forget(keys)
	w.done("delete-tx", 1)
}

func (w *capWorkload) deleteAuto() {
	keys := w.pickLive(1)
	if len(keys) == 0 {
		w.insertAuto()
		return
	}
	w.exec("DELETE FROM kv WHERE k = ?", keys[0])
	w.forget(keys)
	w.done("delete-autocommit", 1)
}

func (w *capWorkload) name(prefix string) string {
	w.nextName++
	return fmt.Sprintf("w_%s%d_%d", prefix, w.step, w.nextName)
}

func (w *capWorkload) createIndex() {
	name := w.name("ix")
	if len(w.tables) > 0 && w.c.rng.IntN(2) == 0 {
		w.exec(fmt.Sprintf("CREATE INDEX %s ON %s(b)", name, w.tables[w.c.rng.IntN(len(w.tables))]))
	} else {
		w.exec(fmt.Sprintf("CREATE INDEX %s ON kv(tag, k)", name))
	}
	w.indexes = append(w.indexes, name)
	w.done("create-index", 1)
}

func (w *capWorkload) dropIndex() {
	if len(w.indexes) == 0 {
		w.createIndex()
		return
	}
	i := w.c.rng.IntN(len(w.indexes))
	w.exec("DROP INDEX IF EXISTS " + w.indexes[i])
	w.indexes = slices.Delete(w.indexes, i, i+1)
	w.done("drop-index", 1)
}

func (w *capWorkload) createTable() {
	name := w.name("t")
	w.c.begin(w.conn)
	w.exec(fmt.Sprintf("CREATE TABLE %s(a INTEGER PRIMARY KEY, b TEXT, c BLOB)", name))
	for n := w.c.rng.IntN(30); n > 0; n-- {
		w.exec(fmt.Sprintf("INSERT INTO %s(b, c) VALUES (?, ?)", name), randTag(w.c.rng), randBytes(w.c.rng, w.blobSize()))
	}
	w.c.commit(w.conn)
	w.tables = append(w.tables, name)
	w.done("create-table", 1)
}

func (w *capWorkload) dropTable() {
	if len(w.tables) == 0 {
		w.createTable()
		return
	}
	i := w.c.rng.IntN(len(w.tables))
	w.exec("DROP TABLE " + w.tables[i])
	w.tables = slices.Delete(w.tables, i, i+1)
	w.resync() // its indexes went with it
	w.done("drop-table", 1)
}

func (w *capWorkload) alterTable() {
	if len(w.tables) == 0 {
		w.createTable()
		return
	}
	t := w.tables[w.c.rng.IntN(len(w.tables))]
	w.exec(fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s INTEGER DEFAULT 7", t, w.name("col")))
	w.done("alter-table", 1)
}

func (w *capWorkload) vacuum() {
	before := w.c.pageCount(w.conn)
	w.exec("VACUUM")
	if w.c.pageCount(w.conn) < before {
		w.shrunk++
	}
	w.done("vacuum", 1)
}

func (w *capWorkload) shrink() {
	keys := w.pickLive(len(w.live) * 9 / 10)
	w.c.begin(w.conn)
	for _, k := range keys {
		w.exec("DELETE FROM kv WHERE k = ?", k)
	}
	w.bumpMeta()
	w.c.commit(w.conn)
	w.forget(keys)
	w.done("delete-most", 1)
	w.vacuum()
}

func (w *capWorkload) bigTx() {
	w.c.begin(w.conn)
	var added []int64
	for range 300 + w.c.rng.IntN(700) {
		k := w.nextKey
		w.nextKey++
		w.exec("INSERT INTO kv(k, tag, v) VALUES (?, ?, ?)", k, randTag(w.c.rng), randBytes(w.c.rng, 100+w.c.rng.IntN(w.ps)))
		added = append(added, k)
	}
	w.c.commit(w.conn)
	w.live = append(w.live, added...)
	w.done("big-tx", 1)
}

// rollbackTx does a lot of work, sometimes more than the page cache holds
// (so pages spill to the file or the WAL), and rolls it all back.
func (w *capWorkload) rollbackTx() {
	c := w.c
	c.begin(w.conn)
	n := 1 + c.rng.IntN(20)
	if c.rng.IntN(3) == 0 {
		n = 500 + c.rng.IntN(1500)
	}
	for range n {
		w.exec("INSERT INTO kv(k, tag, v) VALUES (?, 'rolled-back', ?)", w.nextKey+int64(1_000_000), randBytes(c.rng, w.blobSize()))
		w.nextKey++
	}
	for _, k := range w.pickLive(10) {
		w.exec("UPDATE kv SET v = ? WHERE k = ?", randBytes(c.rng, w.blobSize()), k)
	}
	w.bumpMeta()
	c.rollback(w.conn)
	w.done("rollback", 0)
}

func (w *capWorkload) savepointRolledBackInTx() {
	c := w.c
	c.begin(w.conn)
	kept := w.insertRow()
	w.exec("SAVEPOINT sp")
	w.insertRow()
	for _, k := range w.pickLive(5) {
		w.exec("DELETE FROM kv WHERE k = ?", k)
	}
	w.exec("ROLLBACK TO sp")
	w.exec("RELEASE sp")
	w.bumpMeta()
	c.commit(w.conn)
	w.live = append(w.live, kept)
	w.done("savepoint-rolled-back-in-tx", 1)
}

func (w *capWorkload) savepointOuterRolledBack() {
	w.exec("SAVEPOINT sp_outer")
	w.insertRow()
	w.bumpMeta()
	w.exec("ROLLBACK TO sp_outer")
	w.exec("RELEASE sp_outer")
	w.done("outer-savepoint-rolled-back", 1) // at most an empty commit
}

func (w *capWorkload) savepointReleased() {
	w.exec("SAVEPOINT s1")
	k := w.insertRow()
	w.bumpMeta()
	w.exec("RELEASE s1")
	w.live = append(w.live, k)
	w.done("savepoint-released", 1)
}

func (w *capWorkload) sqlTx() {
	k := w.nextKey
	w.nextKey++
	w.exec("BEGIN; INSERT INTO kv(k, tag, v) VALUES (?, ?, ?); UPDATE meta SET n = n + 1; COMMIT", k, randTag(w.c.rng), randBytes(w.c.rng, w.blobSize()))
	w.live = append(w.live, k)
	w.done("sql-begin-commit", 1)
}

func (w *capWorkload) checkpoint() {
	if w.cp == nil {
		w.updateAuto()
		return
	}
	mode := driver.CheckpointMode(w.c.rng.IntN(4))
	if err := w.cp.Checkpoint(w.c.ctx, mode); err != nil {
		w.c.fatalf("Checkpoint(%d) between commits not yet taken: %v", mode, err)
	}
	w.done(fmt.Sprintf("checkpoint-%d", mode), 0)
}

func (w *capWorkload) cacheSize() {
	n := []int{10, 50, 2000}[w.c.rng.IntN(3)]
	w.exec(fmt.Sprintf("PRAGMA cache_size = %d", n))
	w.done(fmt.Sprintf("cache-size-%d", n), 0)
}

// reopen closes and reopens the file: capture starts again from the file.
func (w *capWorkload) reopen() {
	w.c.close(w.conn)
	w.open()
	w.ops = []string{"reopen"}
	w.step++
}

// restoreEarlier makes a commit it never takes, then restores an earlier
// image: the commit must not be reported, and capture restarts from the
// restored image.
func (w *capWorkload) restoreEarlier() {
	c := w.c
	w.insertAuto()
	img := w.history[c.rng.IntN(len(w.history))]
	c.restore(w.conn, img)
	commits, err := w.pc.TakeCommits(c.ctx)
	if err != nil {
		c.fatalf("TakeCommits after Restore: %v", err)
	}
	if len(commits) != 0 {
		c.errorf("step %d: TakeCommits right after Restore returned %d commits; commits made before Restore must be dropped and the restore itself is not a commit", w.step, len(commits))
	}
	now := c.serialize(w.conn)
	// An image in another journal format (bytes 18/19) may come back with
	// the driver's own format, nothing else changed.
	foreign := len(img) > 20 && len(now) > 20 && !bytes.Equal(img[18:20], now[18:20])
	if !bytes.Equal(now, img) && !(foreign && equalIgnoringJournalMode(now, img)) {
		c.errorf("step %d: Serialize right after Restore differs from the restored image: %s", w.step, describeDiff(now, img))
	}
	w.ps = c.pageSize(w.conn) // the image may have another page size
	w.base = now
	w.resync()
	w.snaps, w.maxCommits, w.ops = nil, 0, nil
	w.step++
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func randTag(r *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 3+r.IntN(10))
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}
