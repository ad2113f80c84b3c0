package wal

import (
	"bytes"
	"testing"
)

// BenchmarkReadNewCommit measures the per-commit cost a capturing driver
// pays: one small transaction appended since the last read.
func BenchmarkReadNewCommit(b *testing.B) {
	w := newWAL(4096, false, 1, 2)
	w.frame(1, 2, w.page(1))
	first, err := ReadCommits(bytes.NewReader(w.bytes()), Position{})
	if err != nil {
		b.Fatal(err)
	}
	w.frame(2, 2, w.page(2))
	file := bytes.NewReader(w.bytes())
	var r Reader
	b.ReportAllocs()
	for b.Loop() {
		batch, err := r.ReadCommits(file, first.Next)
		if err != nil || len(batch.Commits) != 1 {
			b.Fatal(err, len(batch.Commits))
		}
	}
}

// BenchmarkReadLargeCommit reads one 1000-page transaction.
func BenchmarkReadLargeCommit(b *testing.B) {
	w := newWAL(4096, false, 1, 2)
	for i := range 1000 {
		db := uint32(0)
		if i == 999 {
			db = 1000
		}
		w.frame(uint32(i+1), db, w.page(byte(i)))
	}
	file := bytes.NewReader(w.bytes())
	var r Reader
	b.SetBytes(int64(len(w.bytes())))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommits(file, Position{}); err != nil {
			b.Fatal(err)
		}
	}
}
