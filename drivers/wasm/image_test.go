package wasm

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

// FuzzRestore: Restore of arbitrary bytes either refuses them with
// ErrBadImage, leaving the database as it was, or installs a database the
// connection can serialize again; it never panics.
func FuzzRestore(f *testing.F) {
	ctx := context.Background()
	seed, err := New().Open(ctx, driver.Config{})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := seed.Exec(ctx, "CREATE TABLE t(v); INSERT INTO t VALUES ('seed')"); err != nil {
		f.Fatal(err)
	}
	img, err := seed.Serialize(ctx)
	if err != nil {
		f.Fatal(err)
	}
	seed.Close()
	f.Add(img)
	f.Add(withJournalMode(img, journalModeWAL))
	f.Add(img[:len(img)/2])
	f.Add(withByte(img, len(img)-1, 0xFF))
	f.Add(validImage(1024, 1, 1))
	f.Fuzz(func(t *testing.T, image []byte) {
		c, err := New().Open(ctx, driver.Config{PageCapture: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Exec(ctx, "CREATE TABLE keep(v); INSERT INTO keep VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		before, err := c.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Restore(ctx, image)
		if err != nil {
			if !errors.Is(err, ErrBadImage) {
				t.Fatalf("Restore failed with %v, which is not ErrBadImage", err)
			}
			after, err := c.Serialize(ctx)
			if err != nil || !bytes.Equal(after, before) {
				t.Fatalf("a refused Restore changed the database (%v)", err)
			}
			return
		}
		if _, err := c.Serialize(ctx); err != nil {
			t.Fatalf("Serialize after an accepted Restore: %v", err)
		}
		if cs, err := c.(*Conn).TakeCommits(ctx); err != nil || len(cs) != 0 {
			t.Fatalf("TakeCommits after Restore: %d, %v", len(cs), err)
		}
	})
}
