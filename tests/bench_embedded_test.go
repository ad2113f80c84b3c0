package tests

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store"
)

// BenchmarkEmbeddedActivation: activating a new cell and writing to it on
// the embedded default (local files primary, LTX log in a local-files
// bucket), with the shard lease against the lease it replaced (lease.None)
// in the same run. The difference is the shard's synced epoch write.
func BenchmarkEmbeddedActivation(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"none", "shard"} {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			bucket, err := fsstore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close(bucket)
			lg, err := ltxlog.New(ltxlog.Options{Store: bucket, Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			drv, _ := pickDriver("wasm", nodeSync(false, ltxlog.Mode()))
			opts := cell.Options{ScriptName: "bench", Driver: drv, DataDir: filepath.Join(dir, "cells"), Log: lg, Logger: quietLogger(), IdleTimeout: -1}
			if name == "shard" {
				l, err := shard.Open(filepath.Join(dir, "shards"), 16)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				opts.Lease = l
			} else {
				opts.Lease = lease.None{}
			}
			rt, err := cell.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(ctx)
			ns, err := cell.Register(rt, "Bench", newBenchCell)
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				if _, err := cell.Call(ctx, ns.Get(ns.IDFromName("c"+strconv.Itoa(i))), benchWrite); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
