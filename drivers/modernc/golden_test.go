package modernc

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/cellb/cellb/core/backup"
	"github.com/cellb/cellb/core/changeset"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store/memstore"
)

// wholeConn hides WriteImage and RestoreWith: the logs then read and
// restore whole images, as they did before they streamed.
type wholeConn struct{ *Conn }

func (wholeConn) WriteImage()  {}
func (wholeConn) RestoreWith() {}

// imageBuf is a durability.RestoreSink in memory.
type imageBuf struct{ b []byte }

func (m *imageBuf) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *imageBuf) Truncate(n int64) error {
	if n <= int64(len(m.b)) {
		m.b = m.b[:n]
	} else {
		m.b = append(m.b, make([]byte, n-int64(len(m.b)))...)
	}
	return nil
}

// On the same logs, the streamed restores (RestoreWith, WriteImage, the
// backup read as a stream) give byte for byte what the whole-image paths
// give (Restore, Serialize, the object read whole): the changeset mode's
// restore, a backup mode's restore and a backup restored into a
// connection. The changeset log's snapshots are over 1 MiB, so they were
// uploaded streamed.
func TestStreamedRestoresAreByteIdenticalToWholeImages(t *testing.T) {
	ctx := context.Background()
	drv := New(Options{})
	scratch := func(whole bool) func(context.Context) (driver.Conn, error) {
		return func(ctx context.Context) (driver.Conn, error) {
			c, err := drv.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "scratch.db")})
			if whole && err == nil {
				return wholeConn{c.(*Conn)}, nil
			}
			return c, err
		}
	}

	// The changeset log.
	s := memstore.New()
	lg, _ := changeset.New(changeset.Options{Store: s, Logger: csQuiet, MinSnapshotBytes: 2048})
	src := openT(t, "src.db", false)
	cl, err := lg.Open(ctx, openReq(csCell, 3, src, false))
	if err != nil {
		t.Fatal(err)
	}
	w := &csWorkload{t: t, c: src, r: rand.New(rand.NewPCG(21, 22))}
	w.setup()
	mustExec(t, src, "INSERT INTO items(id, body) VALUES (1000000, randomblob(1500000))")
	seq := uint64(0)
	commit := func() {
		seq++
		if err := waitDurable(t, cl.Append(durability.Commit{Seq: seq})); err != nil {
			t.Fatal(err)
		}
	}
	commit()
	for range 60 {
		if w.step() {
			commit()
		}
	}
	if err := cl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	var streamed, whole imageBuf
	if _, err := changeset.Mode().Restore(ctx, s, csCell, durability.RestoreRequest{Scratch: scratch(false)}, &streamed); err != nil {
		t.Fatal(err)
	}
	if _, err := changeset.Mode().Restore(ctx, s, csCell, durability.RestoreRequest{Scratch: scratch(true)}, &whole); err != nil {
		t.Fatal(err)
	}
	if len(whole.b) < 1<<20 || !bytes.Equal(streamed.b, whole.b) {
		t.Fatalf("changeset: streamed restore %d bytes, whole %d, equal %v", len(streamed.b), len(whole.b), bytes.Equal(streamed.b, whole.b))
	}

	// Backups, with page capture.
	bs := memstore.New()
	bl, _ := backup.New(backup.Options{Store: bs, Logger: csQuiet, Interval: time.Hour})
	bsrc, err := drv.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "bsrc.db"), PageCapture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bsrc.Close()
	bcl, err := bl.Open(ctx, openReq(csCell, 4, bsrc, false))
	if err != nil {
		t.Fatal(err)
	}
	bw := &csWorkload{t: t, c: bsrc.(*CapturingConn).Conn, r: rand.New(rand.NewPCG(23, 24))}
	bw.setup()
	mustExec(t, bw.c, "INSERT INTO items(id, body) VALUES (1000000, randomblob(1500000))")
	bseq := uint64(0)
	hand := func() {
		cs, err := bsrc.(driver.PageCapturer).TakeCommits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cs {
			bseq++
			if err := bcl.Append(durability.Commit{Seq: bseq, Pages: &cs[i]}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	hand()
	for range 40 {
		bw.step()
		hand()
	}
	if err := bcl.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	want, err := backup.RestoreImage(ctx, bs, csCell) // the object read whole, its SHA-256 checked
	if err != nil {
		t.Fatal(err)
	}
	if img, _ := bsrc.Serialize(ctx); !bytes.Equal(img, want) {
		t.Fatalf("backup: the saved image is not the database's")
	}
	var out imageBuf
	if _, err := backup.Mode().Restore(ctx, bs, csCell, durability.RestoreRequest{}, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.b, want) {
		t.Fatalf("backup: the mode's streamed restore gives %d bytes, the backup holds %d", len(out.b), len(want))
	}
	into := func(whole bool) []byte {
		c, err := scratch(whole)(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cl, err := bl.Open(ctx, durability.OpenRequest{Cell: csCell, Epoch: 9, Conn: c, Restore: true})
		if err != nil {
			t.Fatal(err)
		}
		cl.Close(ctx, false)
		img, err := c.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	if a, b := into(false), into(true); len(a) < 1<<20 || !bytes.Equal(a, b) {
		t.Fatalf("backup: restored into a connection through RestoreWith %d bytes, through Restore %d; equal %v", len(a), len(b), bytes.Equal(a, b))
	}
}
