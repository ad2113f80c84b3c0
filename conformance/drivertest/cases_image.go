package drivertest

import (
	"bytes"
	"errors"
	"os"

	"github.com/cellb/cellb/core/driver"
)

// imageCases check Serialize and Restore: images are exact (what a file
// copy of a checkpointed database holds), round-trip byte for byte, accept
// celld's WAL-mode images, and bad images are refused without loss.
func imageCases() []caseDef {
	return []caseDef{
		{"image/deterministic", caseImageDeterministic},
		{"image/matches-file", caseImageMatchesFile},
		{"image/round-trip", caseImageRoundTrip},
		{"image/wal-image", func(c *checkT) { caseImageJournalFormat(c, 2) }},
		{"image/rollback-image", func(c *checkT) { caseImageJournalFormat(c, 1) }},
		{"image/restore-then-write", caseImageRestoreThenWrite},
		{"image/rejects-garbage", caseImageRejectsGarbage},
		{"image/write-image", caseImageWriteImage},
		{"image/restore-with", caseImageRestoreWith},
	}
}

// fill writes a little of everything: several tables, an index, small and
// overflowing blobs, and a deleted range (so the freelist is not empty).
func (c *checkT) fill(conn driver.Conn, rows int) {
	ps := c.pageSize(conn)
	c.exec(conn, "CREATE TABLE IF NOT EXISTS kv(k INTEGER PRIMARY KEY, tag TEXT, v BLOB)")
	c.exec(conn, "CREATE TABLE IF NOT EXISTS other(name TEXT PRIMARY KEY, n REAL) WITHOUT ROWID")
	c.exec(conn, "CREATE INDEX IF NOT EXISTS kv_tag ON kv(tag)")
	c.begin(conn)
	base := c.rng.Int64N(1 << 40)
	for i := range rows {
		size := c.rng.IntN(200)
		if i%7 == 0 {
			size = ps + c.rng.IntN(3*ps)
		}
		c.exec(conn, "INSERT INTO kv(k, tag, v) VALUES (?, ?, ?)", base+int64(i), randTag(c.rng), randBytes(c.rng, size))
		c.exec(conn, "INSERT OR REPLACE INTO other VALUES (?, ?)", randTag(c.rng), c.rng.Float64())
	}
	c.commit(conn)
	c.exec(conn, "DELETE FROM kv WHERE k % 5 = 0")
}

func caseImageDeterministic(c *checkT) {
	capture := c.caps.PageCapture
	conn := c.open(c.path("det.db"), capture)
	c.fill(conn, 200)
	a := c.serialize(conn)
	b := c.serialize(conn)
	if !bytes.Equal(a, b) {
		c.errorf("two Serialize calls with no write between differ: %s", describeDiff(b, a))
	}
	if err := checkHeader(a, c.pageSize(conn), c.pageCount(conn)); err != nil {
		c.errorf("Serialize: %v", err)
	}
	if capture {
		pc, ok := conn.(driver.PageCapturer)
		if !ok {
			c.fatalf("the driver declares PageCapture but a Conn opened with PageCapture does not implement driver.PageCapturer")
		}
		if _, err := pc.TakeCommits(c.ctx); err != nil {
			c.fatalf("TakeCommits: %v", err)
		}
		c.serialize(conn)
		c.serialize(conn)
		commits, err := pc.TakeCommits(c.ctx)
		if err != nil {
			c.fatalf("TakeCommits: %v", err)
		}
		if len(commits) != 0 {
			c.errorf("TakeCommits after only Serialize calls returned %d commits; Serialize must not commit", len(commits))
		}
	}
}

func caseImageMatchesFile(c *checkT) {
	path := c.path("file.db")
	conn := c.open(path, c.caps.PageCapture)
	c.fill(conn, 300)
	img := c.serialize(conn)
	c.close(conn)
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		c.skip("a non-empty %s-wal remains after Close, so the main file alone is not the database", path)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		c.fatalf("reading the database file: %v", err)
	}
	if !bytes.Equal(file, img) {
		c.errorf("Serialize differs from the database file a clean Close leaves (an exact image rewrites no header bytes): %s", describeDiff(img, file))
	}
}

func caseImageRoundTrip(c *checkT) {
	a := c.open(c.path("a.db"), false)
	c.fill(a, 300)
	img := c.serialize(a)
	want := c.dump(a)

	b := c.open(c.path("b.db"), c.caps.PageCapture)
	c.fill(b, 600) // different, larger content that Restore must replace
	c.restore(b, img)
	got := c.serialize(b)
	if !bytes.Equal(got, img) {
		c.errorf("Serialize after Restore(image) differs from the image: %s", describeDiff(got, img))
	}
	if n := c.pageCount(b); n*int64(c.pageSize(b)) != int64(len(img)) {
		c.errorf("PageCount after Restore is %d, the image has %d pages", n, int64(len(img))/int64(c.pageSize(b)))
	}
	if d := diffDumps(c.dump(b), want); d != "" {
		c.errorf("content after Restore differs: %s", d)
	}
	// Restoring the same image twice is harmless.
	c.restore(b, img)
	if again := c.serialize(b); !bytes.Equal(again, img) {
		c.errorf("a second Restore of the same image changed it: %s", describeDiff(again, img))
	}
	// The restored file persists across reopening.
	c.close(b)
	b = c.open(c.path("b.db"), false)
	if d := diffDumps(c.dump(b), want); d != "" {
		c.errorf("content after Restore and reopening differs: %s", d)
	}
}

// caseImageJournalFormat restores an image whose header claims the given
// journal format (2 = WAL, as celld writes; 1 = rollback journal): the
// driver must make it usable in its own journal mode.
func caseImageJournalFormat(c *checkT, format byte) {
	a := c.open(c.path("src.db"), false)
	c.fill(a, 250)
	want := c.dump(a)
	img := withJournalBytes(c.serialize(a), format)

	capture := c.caps.PageCapture
	b := c.open(c.path("dst.db"), capture)
	c.exec(b, "CREATE TABLE before_restore(x); INSERT INTO before_restore VALUES (1)")
	var pc driver.PageCapturer
	if capture {
		var ok bool
		if pc, ok = b.(driver.PageCapturer); !ok {
			c.fatalf("the driver declares PageCapture but a Conn opened with PageCapture does not implement driver.PageCapturer")
		}
	}
	if err := b.Restore(c.ctx, img); err != nil {
		c.fatalf("Restore of an image with header bytes 18/19 = %d: %v", format, err)
	}
	if d := diffDumps(c.dump(b), want); d != "" {
		c.fatalf("content after Restore of an image with header bytes 18/19 = %d differs: %s", format, d)
	}
	restored := c.serialize(b)
	if !equalIgnoringJournalMode(restored, img) {
		c.errorf("Serialize after Restore differs from the image beyond the journal-mode header bytes: %s", describeDiff(restored, img))
	}
	if capture {
		commits, err := pc.TakeCommits(c.ctx)
		if err != nil {
			c.fatalf("TakeCommits after Restore: %v", err)
		}
		if len(commits) != 0 {
			c.errorf("TakeCommits right after Restore returned %d commits; capture must start afresh from the restored image", len(commits))
		}
	}
	// Writing after the restore works and is captured relative to the
	// image right after Restore.
	c.begin(b)
	c.exec(b, "INSERT INTO kv(k, tag, v) VALUES (-1, 'after', ?)", randBytes(c.rng, 3*c.pageSize(b)))
	c.exec(b, "UPDATE other SET n = n + 1")
	c.commit(b)
	c.exec(b, "DELETE FROM kv WHERE k % 3 = 0")
	now := c.serialize(b)
	if capture {
		commits, err := pc.TakeCommits(c.ctx)
		if err != nil {
			c.fatalf("TakeCommits: %v", err)
		}
		ps := c.pageSize(b)
		if err := verifyCommits(ps, restored, commits, nil, now); err != nil {
			c.errorf("after Restore of an image with header bytes 18/19 = %d: %v", format, err)
		}
	}
	check := c.open(c.path("check.db"), false)
	c.restore(check, now)
	if d := diffDumps(c.dump(check), c.dump(b)); d != "" {
		c.errorf("the image serialized after writing on a restored database does not hold the same content: %s", d)
	}
}

func caseImageRestoreThenWrite(c *checkT) {
	a := c.open(c.path("a.db"), false)
	c.fill(a, 100)
	img := c.serialize(a)
	b := c.open(c.path("b.db"), false)
	c.restore(b, img)
	c.fill(b, 150)
	c.exec(b, "VACUUM")
	after := c.serialize(b)
	if err := checkHeader(after, c.pageSize(b), c.pageCount(b)); err != nil {
		c.errorf("Serialize after Restore and writes: %v", err)
	}
	d := c.open(c.path("d.db"), false)
	c.restore(d, after)
	if got := c.serialize(d); !bytes.Equal(got, after) {
		c.errorf("image of a restored-then-written database does not round-trip: %s", describeDiff(got, after))
	}
	if diff := diffDumps(c.dump(d), c.dump(b)); diff != "" {
		c.errorf("content differs: %s", diff)
	}
	if got := c.queryOne(d, "PRAGMA integrity_check"); got != "ok" {
		c.errorf("integrity_check of the round-tripped image: %v", got)
	}
}

func caseImageRejectsGarbage(c *checkT) {
	conn := c.open(c.path("keep.db"), c.caps.PageCapture)
	c.fill(conn, 100)
	keep := c.serialize(conn)
	want := c.dump(conn)
	ps := c.pageSize(conn)
	notDB := bytes.Repeat([]byte("this is not a database "), ps/8)[:2*ps]
	bad := []struct {
		name string
		img  []byte
	}{
		{"text that is not a database", notDB},
		{"an image cut in the middle of a page", keep[:len(keep)-ps/2]},
		{"an image whose header gives an invalid page size", func() []byte {
			b := bytes.Clone(keep[:3*ps])
			b[16], b[17] = 0x00, 0x03 // 768: not a power of two
			return b
		}()},
	}
	for _, b := range bad {
		if err := conn.Restore(c.ctx, b.img); err == nil {
			c.errorf("Restore of %s succeeded; it must fail and keep the database", b.name)
		}
		if d := diffDumps(c.dump(conn), want); d != "" {
			c.fatalf("after a refused Restore of %s the database changed: %s", b.name, d)
		}
		if got := c.serialize(conn); !bytes.Equal(got, keep) {
			c.errorf("after a refused Restore of %s the image changed: %s", b.name, describeDiff(got, keep))
		}
	}
}

// caseImageWriteImage: a driver that streams its image (driver.ImageWriter,
// optional; ErrUnsupported means it does not) writes exactly Serialize's
// bytes, and says how many.
func caseImageWriteImage(c *checkT) {
	conn := c.open(c.path("stream.db"), c.caps.PageCapture)
	iw, ok := conn.(driver.ImageWriter)
	if !ok {
		c.skip("the driver does not implement driver.ImageWriter")
	}
	c.fill(conn, 300)
	var buf bytes.Buffer
	n, err := iw.WriteImage(c.ctx, &buf)
	if errors.Is(err, driver.ErrUnsupported) {
		c.skip("the driver does not implement driver.ImageWriter")
	}
	if err != nil {
		c.fatalf("WriteImage: %v", err)
	}
	img := c.serialize(conn)
	if !bytes.Equal(buf.Bytes(), img) {
		c.errorf("WriteImage wrote other bytes than Serialize returns: %s", describeDiff(buf.Bytes(), img))
	}
	if n != int64(buf.Len()) {
		c.errorf("WriteImage wrote %d bytes but reported %d", buf.Len(), n)
	}
}

// caseImageRestoreWith: a driver that restores from a file it provides
// (driver.ImageRestorer, optional) installs exactly the image written into
// it, and a fill that fails leaves the database as it was.
func caseImageRestoreWith(c *checkT) {
	src := c.open(c.path("with-src.db"), c.caps.PageCapture)
	c.fill(src, 200)
	img := c.serialize(src)
	dst := c.open(c.path("with-dst.db"), c.caps.PageCapture)
	ir, ok := dst.(driver.ImageRestorer)
	if !ok {
		c.skip("the driver does not implement driver.ImageRestorer")
	}
	c.fill(dst, 50)
	before := c.serialize(dst)
	failed := errors.New("the fill failed")
	err := ir.RestoreWith(c.ctx, func(w driver.ImageFile) error {
		if _, err := w.WriteAt(img[:len(img)/2], 0); err != nil {
			return err
		}
		return failed
	})
	if errors.Is(err, driver.ErrUnsupported) {
		c.skip("the driver does not implement driver.ImageRestorer")
	}
	if !errors.Is(err, failed) {
		c.errorf("RestoreWith whose fill failed returned %v, want the fill's error", err)
	}
	if got := c.serialize(dst); !bytes.Equal(got, before) {
		c.errorf("RestoreWith whose fill failed changed the database: %s", describeDiff(got, before))
	}
	// Written back to front, in pages, as a restore lays files over
	// each other.
	ps := c.pageSize(src)
	err = ir.RestoreWith(c.ctx, func(w driver.ImageFile) error {
		for off := len(img) - ps; off >= 0; off -= ps {
			if _, err := w.WriteAt(img[off:off+ps], int64(off)); err != nil {
				return err
			}
		}
		return w.Truncate(int64(len(img)))
	})
	if err != nil {
		c.fatalf("RestoreWith: %v", err)
	}
	if got := c.serialize(dst); !bytes.Equal(got, img) {
		c.errorf("RestoreWith installed another image than the one written: %s", describeDiff(got, img))
	}
}
