package main

import (
	"context"
	"testing"
)

// BenchmarkMethodCall measures one typed method call that adds 1 to a
// Tally (a write, so each reply waits for its commit to be durable on the
// in-memory bucket): on the node that owns the cell, and from another node
// of the fleet (over the peer port).
func BenchmarkMethodCall(b *testing.B) {
	_, ms := methodNodes(b, true, 2)
	ctx := context.Background()
	if _, err := ms[0].add.Call(ctx, ms[0].stub("bench"), 0); err != nil { // node 0 takes it
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		from int
	}{{"here", 0}, {"across-nodes", 1}} {
		b.Run(c.name, func(b *testing.B) {
			stub := ms[c.from].stub("bench")
			for b.Loop() {
				if _, err := ms[c.from].add.Call(ctx, stub, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
