package shard

import (
	"context"
	"testing"

	"github.com/cellb/cellb/core/lease"
)

// BenchmarkAcquireRelease: one grant and its release, the lease's share of
// a cell activation. "none" is the baseline (lease.None, what the embedded
// default used before); "held" is a shard this process already holds (one
// synced epoch write); "cold" takes and lets go of the shard's lock too.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, l lease.Lease, cell string) {
		for b.Loop() {
			g, err := l.TryAcquire(ctx, cell)
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("none", func(b *testing.B) { run(b, lease.None{}, "Counter:x") })
	b.Run("held", func(b *testing.B) {
		l, err := Open(b.TempDir(), 1)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		if _, err := l.TryAcquire(ctx, "Counter:keeps-the-shard"); err != nil {
			b.Fatal(err)
		}
		run(b, l, "Counter:x")
	})
	b.Run("cold", func(b *testing.B) {
		l, err := Open(b.TempDir(), 1)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		run(b, l, "Counter:x")
	})
}

// BenchmarkCheckWrite is the per-commit cost of the lease.
func BenchmarkCheckWrite(b *testing.B) {
	l, err := Open(b.TempDir(), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	g, err := l.TryAcquire(context.Background(), "Counter:x")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := g.CheckWrite(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOf is the placement hash on a typical key.
func BenchmarkOf(b *testing.B) {
	key := "Counter:5b7f3a0c1e9d4b2a8f6e0d1c2b3a4958"
	for b.Loop() {
		Of(key, 16)
	}
}
