package tests

// The cost of the output gate on outgoing I/O (issue 22, point 4): one
// cell writes, then calls N other cells at once, gated (the calls wait
// until the write is durable) against cell.AllowUnconfirmed (they go at
// once). Written up in docs/benchmarks.md; run with
//
//	go test -run '^$' -bench FanOut -benchtime 200x ./tests

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
)

func BenchmarkFanOut(b *testing.B) {
	ctx := context.Background()
	buckets := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"fs", func(b *testing.B) store.Store {
			fs, err := fsstore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close(fs) })
			return fs
		}},
		// A bucket whose every PUT takes 5 ms, as a round trip does.
		{"5ms-puts", func(b *testing.B) store.Store {
			return faultstore.New(memstore.New(), faultstore.Config{PerOp: map[faultstore.Op]faultstore.Faults{faultstore.OpPut: {Latency: 5 * time.Millisecond}}})
		}},
	}
	for _, bk := range buckets {
		for _, n := range []int{1, 8, 32} {
			for _, gated := range []bool{true, false} {
				name := "gated"
				if !gated {
					name = "unconfirmed"
				}
				b.Run(fmt.Sprintf("%s/n=%d/%s", bk.name, n, name), func(b *testing.B) {
					lg, err := ltxlog.New(ltxlog.Options{Store: bk.open(b), Logger: quietLogger()})
					if err != nil {
						b.Fatal(err)
					}
					drv, _ := pickDriver("wasm", nodeSync(false, ltxlog.Mode()))
					_, ns := benchRuntime(b, drv, durability.Log(lg), nil)
					root := ns.Get(ns.IDFromName("root"))
					leaves := make([]*cell.Stub[*benchCell], n)
					for i := range leaves {
						leaves[i] = ns.Get(ns.IDFromName(fmt.Sprintf("leaf%d", i)))
						if _, err := cell.Call(ctx, leaves[i], benchWrite); err != nil {
							b.Fatal(err)
						}
					}
					// reach sums how long the calls took to reach their
					// leaf, from the moment they were made.
					var reachMu sync.Mutex
					var reach time.Duration
					var reached int
					op := func(ctx context.Context, c *benchCell) (int64, error) {
						if _, err := benchWrite(ctx, c); err != nil {
							return 0, err
						}
						made := time.Now()
						cctx := ctx
						if !gated {
							cctx = cell.AllowUnconfirmed(ctx)
						}
						var wg sync.WaitGroup
						errs := make([]error, n)
						for i, leaf := range leaves {
							wg.Add(1)
							go func() {
								defer wg.Done()
								_, errs[i] = cell.Call(cctx, leaf, func(ctx context.Context, c *benchCell) (int64, error) {
									d := time.Since(made)
									reachMu.Lock()
									reach += d
									reached++
									reachMu.Unlock()
									return benchRead(ctx, c)
								})
							}()
						}
						wg.Wait()
						for _, err := range errs {
							if err != nil {
								return 0, err
							}
						}
						return 0, nil
					}
					if _, err := cell.Call(ctx, root, op); err != nil {
						b.Fatal(err)
					}
					reach, reached = 0, 0
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, err := cell.Call(ctx, root, op); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(reach.Microseconds())/float64(reached), "µs-to-reach-leaf")
				})
			}
		}
	}
}
