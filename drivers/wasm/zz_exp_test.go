package wasm

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

func BenchmarkExpOpen(b *testing.B) {
	for _, v := range []string{"plain", "excl", "excl-persist"} {
		b.Run(v, func(b *testing.B) {
			dir := b.TempDir()
			paths := make([]string, b.N)
			setup := func(db *sqlite3.Conn) {
				if v != "plain" {
					if err := db.Exec("PRAGMA locking_mode=EXCLUSIVE"); err != nil {
						b.Fatal(err)
					}
				}
				if v == "excl-persist" {
					if _, err := db.FileControl("main", sqlite3.FCNTL_PERSIST_WAL, true); err != nil {
						b.Fatal(err)
					}
					if err := db.Exec("PRAGMA journal_size_limit=0"); err != nil {
						b.Fatal(err)
					}
				}
			}
			for i := range paths {
				paths[i] = filepath.Join(dir, fmt.Sprintf("c%d.db", i))
				db, err := sqlite3.Open("file:" + paths[i])
				if err != nil {
					b.Fatal(err)
				}
				setup(db)
				if err := db.Exec("PRAGMA journal_mode=wal; CREATE TABLE n(id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO n VALUES (1, 0)"); err != nil {
					b.Fatal(err)
				}
				db.Close()
			}
			conns := make([]*sqlite3.Conn, 0, b.N)
			b.ResetTimer()
			for _, p := range paths {
				db, err := sqlite3.Open("file:" + p)
				if err != nil {
					b.Fatal(err)
				}
				conns = append(conns, db)
				setup(db)
				if err := db.Exec("PRAGMA synchronous=NORMAL"); err != nil {
					b.Fatal(err)
				}
				s, _, err := db.Prepare("SELECT v FROM n WHERE id = 1")
				if err != nil {
					b.Fatal(err)
				}
				for s.Step() {
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, db := range conns {
				db.Close()
			}
		})
	}
}
