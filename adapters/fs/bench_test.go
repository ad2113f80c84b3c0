//go:build unix

package fs_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/store"
)

// The benchmarks write 1 KiB objects, the size of CellB's JSON records.
// BenchmarkBaselineRenameWrite is what any careful program pays for one
// durable file replacement on the same disk, measured in the same run, so
// the store's figures can be read as a ratio to it.
const benchSize = 1 << 10

func benchBody(b *testing.B) []byte {
	body := make([]byte, benchSize)
	rand.Read(body)
	return body
}

func openBench(b *testing.B) *fs.Store {
	b.Helper()
	s, err := fs.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

const benchKey = "cells/Counter:0123456789abcdef/own.json"

// BenchmarkBaselineRenameWrite: os.WriteFile to a temporary file, fsync,
// rename over the target, fsync the directory.
func BenchmarkBaselineRenameWrite(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cells", "Counter:0123456789abcdef")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		b.Fatal(err)
	}
	body := benchBody(b)
	target := filepath.Join(dir, "own.json")
	tmp := filepath.Join(dir, ".own.json.tmp")
	b.SetBytes(benchSize)
	for b.Loop() {
		if err := os.WriteFile(tmp, body, 0o666); err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(tmp, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Rename(tmp, target); err != nil {
			b.Fatal(err)
		}
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}

// BenchmarkBaselineRead: os.ReadFile of the same kind of file.
func BenchmarkBaselineRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "own.json")
	if err := os.WriteFile(path, benchBody(b), 0o666); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	for b.Loop() {
		if _, err := os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	s := openBench(b)
	body := benchBody(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		if _, err := s.Put(b.Context(), benchKey, body, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutCreateOnly(b *testing.B) {
	s := openBench(b)
	body := benchBody(b)
	b.SetBytes(benchSize)
	i := 0
	for b.Loop() {
		key := fmt.Sprintf("cells/Counter:%016x/own.json", i)
		i++
		if _, err := s.Put(b.Context(), key, body, store.PutOptions{Condition: store.IfAbsent}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutCAS(b *testing.B) {
	s := openBench(b)
	body := benchBody(b)
	v, err := s.Put(b.Context(), benchKey, body, store.PutOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	for b.Loop() {
		if v, err = s.Put(b.Context(), benchKey, body, store.PutOptions{Condition: store.IfVersion(v)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	s := openBench(b)
	if _, err := s.Put(b.Context(), benchKey, benchBody(b), store.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	for b.Loop() {
		if _, err := s.Get(b.Context(), benchKey); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVersusBaseline alternates, iteration by iteration, one store
// operation and one baseline operation on the same disk, and reports
// both times and their ratio. On a shared machine whose load drifts, the
// paired ratio is steadier than two benchmarks run one after the other.
func BenchmarkVersusBaseline(b *testing.B) {
	body := benchBody(b)
	baseDir := filepath.Join(b.TempDir(), "cells", "Counter:0123456789abcdef")
	if err := os.MkdirAll(baseDir, 0o777); err != nil {
		b.Fatal(err)
	}
	baseTarget := filepath.Join(baseDir, "own.json")
	baselineWrite := func() {
		tmp := baseTarget + ".tmp"
		if err := os.WriteFile(tmp, body, 0o666); err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(tmp, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Rename(tmp, baseTarget); err != nil {
			b.Fatal(err)
		}
		d, err := os.Open(baseDir)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
	baselineRead := func() {
		if _, err := os.ReadFile(baseTarget); err != nil {
			b.Fatal(err)
		}
	}
	baselineWrite()

	paired := func(b *testing.B, baseline func(), op func(i int)) {
		var base, own time.Duration
		i := 0
		for b.Loop() {
			t0 := time.Now()
			baseline()
			t1 := time.Now()
			op(i)
			own += time.Since(t1)
			base += t1.Sub(t0)
			i++
		}
		b.ReportMetric(float64(own.Nanoseconds())/float64(i), "store-ns/op")
		b.ReportMetric(float64(base.Nanoseconds())/float64(i), "baseline-ns/op")
		b.ReportMetric(float64(own)/float64(base), "x-baseline")
	}
	ctx := b.Context()
	b.Run("put", func(b *testing.B) {
		s := openBench(b)
		paired(b, baselineWrite, func(int) {
			if _, err := s.Put(ctx, benchKey, body, store.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("put-create-only", func(b *testing.B) {
		s := openBench(b)
		paired(b, baselineWrite, func(i int) {
			key := fmt.Sprintf("cells/Counter:%016x/own.json", i)
			if _, err := s.Put(ctx, key, body, store.PutOptions{Condition: store.IfAbsent}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("put-cas", func(b *testing.B) {
		s := openBench(b)
		v, err := s.Put(ctx, benchKey, body, store.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		paired(b, baselineWrite, func(int) {
			if v, err = s.Put(ctx, benchKey, body, store.PutOptions{Condition: store.IfVersion(v)}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("get", func(b *testing.B) {
		s := openBench(b)
		if _, err := s.Put(ctx, benchKey, body, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		paired(b, baselineRead, func(int) {
			if _, err := s.Get(ctx, benchKey); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// ackBodySize is the size of a node-log bundle of one small commit, the
// object each acknowledgement of the embedded default writes.
const ackBodySize = 300

// durableNewFile is BenchmarkAckFloor/durable-new-file (tests/
// bench_floor_test.go) step by step: a temporary file in the target
// directory, written, fsynced and closed, linked under its final name, the
// temporary name removed, and the directory fsynced. d is the directory,
// open.
func durableNewFile(dir string, d *os.File, n int, body []byte) error {
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
}

// BenchmarkPutNewKeyVersusFloor alternates, iteration by iteration, the
// floor of one acknowledgement on a files bucket (durableNewFile, 300
// bytes) and a Put of a new 300-byte key into a directory that exists (as
// a node log's next bundle is), on the same disk, and reports both mean
// times and floor/put, the Put's rate as a fraction of the floor's (of
// the means, and of the medians).
func BenchmarkPutNewKeyVersusFloor(b *testing.B) {
	body := make([]byte, ackBodySize)
	rand.Read(body)
	for _, c := range []struct {
		name string
		cond store.Condition
	}{{"unconditional", store.Condition{}}, {"if-absent", store.IfAbsent}} {
		b.Run(c.name, func(b *testing.B) {
			floorDir := b.TempDir()
			d, err := os.Open(floorDir)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			s := openBench(b)
			ctx := b.Context()
			const prefix = "log/node-1/0000000001/bundle/"
			// The directory exists, as it does after a node's first bundle.
			if _, err := s.Put(ctx, prefix+"e1-00000000.ltxb", body, store.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			warmLocks(b, s)
			var floor, put time.Duration
			var floors, puts []time.Duration
			n := 0
			for b.Loop() {
				n++
				// Which goes first alternates, so neither always follows
				// the other's journal commit.
				var tf, tp time.Duration
				for j := range 2 {
					t0 := time.Now()
					if (n+j)%2 == 0 {
						if err := durableNewFile(floorDir, d, n, body); err != nil {
							b.Fatal(err)
						}
						tf = time.Since(t0)
						continue
					}
					key := fmt.Sprintf("%se1-%08d.ltxb", prefix, n)
					if _, err := s.Put(ctx, key, body, store.PutOptions{Condition: c.cond}); err != nil {
						b.Fatal(err)
					}
					tp = time.Since(t0)
				}
				floor += tf
				put += tp
				floors = append(floors, tf)
				puts = append(puts, tp)
			}
			slices.Sort(floors)
			slices.Sort(puts)
			b.ReportMetric(float64(put.Nanoseconds())/float64(n), "put-ns/op")
			b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "floor-ns/op")
			// Medians too: on a shared machine a few stalls move the means.
			b.ReportMetric(float64(floors[n/2])/float64(puts[n/2]), "p50-rate-x-floor")
			b.ReportMetric(float64(floor)/float64(put), "rate-x-floor")
		})
	}
}

// warmLocks writes objects until every lock file of s exists and is open,
// as in a bucket that has been used before: a fresh bucket's first writes
// of each of the 256 stripes also create its lock file.
func warmLocks(b *testing.B, s *fs.Store) {
	b.Helper()
	locks := filepath.Join(s.Root(), fs.MetaDir, "locks")
	for i := 0; ; i++ {
		if ents, err := os.ReadDir(locks); err == nil && len(ents) >= 256 {
			return
		}
		if _, err := s.Put(b.Context(), fmt.Sprintf("warm/%d", i), nil, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
