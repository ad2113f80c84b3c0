package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

// BenchmarkAcquireRequests counts the bucket requests one acquisition costs,
// by the state the cell is in. The figures (requests/acquire) do not depend
// on the machine; ns/op is the protocol's CPU cost on an in-memory bucket.
func BenchmarkAcquireRequests(b *testing.B) {
	for _, kind := range []string{"fresh", "released", "dead-owner", "owned-elsewhere"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			fs := faultstore.New(memstore.New(), faultstore.Config{})
			clk := clock.NewFake(time.UnixMilli(1_000_000))
			rnd := seeded{rand.New(rand.NewPCG(1, 1))}
			a, _ := Join(ctx, Options{Store: fs, Node: "node_a", Clock: clk, Logger: quiet, Rand: rnd})
			other, _ := Join(ctx, Options{Store: fs, Node: "node_b", Clock: clk, Logger: quiet, Rand: rnd})
			defer a.Kill()
			defer other.Kill()
			cells := make([]string, b.N)
			for i := range cells {
				cells[i] = fmt.Sprintf("Bench:c%d", i)
				switch kind {
				case "released":
					g, _ := other.TryAcquire(ctx, cells[i])
					g.Release(ctx)
				case "dead-owner", "owned-elsewhere":
					other.TryAcquire(ctx, cells[i])
				}
			}
			if kind == "dead-owner" {
				// The owner's lease is gone, as after a crash and expiry.
				fs.Inner().Delete(ctx, layout.NodeKey("node_b"))
			}
			before := fs.Stats().Calls()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := a.TryAcquire(ctx, cells[i])
				if (err != nil) != (kind == "owned-elsewhere") {
					b.Fatalf("%s: %v", kind, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(fs.Stats().Calls()-before)/float64(b.N), "requests/acquire")
		})
	}
}

// BenchmarkLeaseUpkeep counts the requests a node makes per second of
// keeping its lease, at the default TTL (one conditional PUT every TTL/3).
func BenchmarkLeaseUpkeep(b *testing.B) {
	ctx := context.Background()
	fs := faultstore.New(memstore.New(), faultstore.Config{})
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n, _ := newDriven(ctx, Options{Store: fs, Node: "node_a", Clock: clk, Logger: quiet, Rand: seeded{rand.New(rand.NewPCG(2, 2))}}, celldRules())
	defer n.Kill()
	before := fs.Stats().Calls()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clk.Advance(time.Second)
		n.renewDue()
	}
	b.StopTimer()
	b.ReportMetric(float64(fs.Stats().Calls()-before)/float64(b.N), "requests/node-second")
}

// BenchmarkConfirmLog is the node log's credit read after each flush, on
// an in-memory bucket: the GET of the node record and the decision. The
// record is the one Join installed (unchanged between renewals, as it is
// for nearly every flush).
func BenchmarkConfirmLog(b *testing.B) {
	ctx := context.Background()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	n, err := Join(ctx, Options{Store: memstore.New(), Node: "node_a", Clock: clk, Logger: quiet, NodeLog: true, SweepInterval: -1,
		Rand: seeded{rand.New(rand.NewPCG(3, 3))}})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Kill()
	b.ReportAllocs()
	for b.Loop() {
		if err := n.ConfirmLog(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
