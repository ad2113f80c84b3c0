package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cellb/cellb/drivers/wasm"
)

// BenchmarkAckFloor measures, in one run on one disk, what one caller's
// acknowledged write cannot go below when every acknowledgement needs a new
// object in a local-files bucket, beside what raw SQLite pays:
//
//   - raw-sqlite-full: the AckedWrites baseline (WAL, synchronous=FULL: a
//     commit appends to the -wal file and syncs it);
//   - append-fsync: the same in its barest form, 220 bytes appended to an
//     open file and synced;
//   - durable-new-file: the least a new, durable, never-partly-visible file
//     of 220 bytes (an LTX file of a one-row update) costs: write a temporary
//     file, fsync it, link it under its final name, remove the temporary name,
//     fsync the directory. A new file needs its inode and directory entry
//     committed to the file system's journal, an append to a file that
//     exists does not.
//
// BenchmarkAckedWrites' one-caller rows divided by durable-new-file's rate
// show how near the floor an acknowledgement is; raw-sqlite-full divided by
// it shows why the one-caller goal of issue 13 (0.67× raw SQLite) cannot be
// met while each acknowledgement needs a new object on the same disk.
func BenchmarkAckFloor(b *testing.B) {
	ctx := context.Background()
	b.Run("raw-sqlite-full", func(b *testing.B) {
		c := directConn(b, wasm.New(wasm.WithJournalMode(wasm.JournalWAL), wasm.WithPragmas("synchronous=FULL")))
		var mu sync.Mutex
		callers(b, 1, func() error { mu.Lock(); defer mu.Unlock(); return directWrite(ctx, c) })
	})
	body := make([]byte, 220)
	b.Run("append-fsync", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "log"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		callers(b, 1, func() error {
			if _, err := f.Write(body); err != nil {
				return err
			}
			return f.Sync()
		})
	})
	b.Run("durable-new-file", func(b *testing.B) {
		dir := b.TempDir()
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		n := 0
		callers(b, 1, func() error {
			n++
			tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", n))
			f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if _, err := f.Write(body); err != nil {
				f.Close()
				return err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := os.Link(tmp, filepath.Join(dir, fmt.Sprintf("%016x.ltx", n))); err != nil {
				return err
			}
			if err := os.Remove(tmp); err != nil {
				return err
			}
			return d.Sync()
		})
	})
}
