package ltxlog

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/memstore"
)

// requestStore counts a bucket's requests by kind; a bundle's PUT takes
// a little real time (bundleDelay), as a bucket's round trip does, so the
// commits of many cells gather into each bundle.
type requestStore struct {
	store.Store
	bundleDelay                        time.Duration
	bundles, cellPuts, otherPuts, gets atomic.Int64
	deletes, lists                     atomic.Int64
}

type requestCount struct{ bundles, cellPuts, otherPuts, gets, deletes, lists int64 }

func (s *requestStore) count() requestCount {
	return requestCount{s.bundles.Load(), s.cellPuts.Load(), s.otherPuts.Load(), s.gets.Load(), s.deletes.Load(), s.lists.Load()}
}

func (c requestCount) since(o requestCount) requestCount {
	return requestCount{c.bundles - o.bundles, c.cellPuts - o.cellPuts, c.otherPuts - o.otherPuts, c.gets - o.gets, c.deletes - o.deletes, c.lists - o.lists}
}

func (c requestCount) puts() int64 { return c.bundles + c.cellPuts + c.otherPuts }

func (s *requestStore) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	switch {
	case strings.HasPrefix(key, "log/") && strings.HasSuffix(key, ".ltxb"):
		s.bundles.Add(1)
		time.Sleep(s.bundleDelay)
	case strings.HasPrefix(key, "cells/"):
		s.cellPuts.Add(1)
	default:
		s.otherPuts.Add(1)
	}
	return s.Store.Put(ctx, key, data, opts)
}

func (s *requestStore) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	data, err := store.ReadBody(ctx, "put", key, r, size)
	if err != nil {
		return "", err
	}
	return s.Put(ctx, key, data, opts)
}

func (s *requestStore) Get(ctx context.Context, key string) (*store.Object, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *requestStore) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	s.gets.Add(1)
	return store.NewRangeReader(ctx, s.Store, key, offset, length)
}

func (s *requestStore) Delete(ctx context.Context, key string) error {
	s.deletes.Add(1)
	return s.Store.Delete(ctx, key)
}

func (s *requestStore) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, opts)
}

// busyCells writes rounds commits to each of cells cells of one node
// (every cell one commit a round, all at once, then every acknowledgement
// awaited), through the node log or per cell, with or without a retention
// window, then closes every cell (tiering what waits). It returns the
// requests made from the first round to the last close, and the writes.
// The epochs' snapshots (an activation's) are made before the count.
func busyCells(t testing.TB, cells, rounds int, nodeLog bool, retention time.Duration) (requestCount, int) {
	ctx := context.Background()
	mem := memstore.New()
	s := &requestStore{Store: mem, bundleDelay: 2 * time.Millisecond}
	opts := Options{Logger: quiet, Store: s, Retention: retention}
	if nodeLog {
		rec := newNodeRecord(t, s, "node_a")
		// Tiering by rows alone (TierAfterRows, 64): no timer decides
		// how many files a cell's rows make.
		opts.NodeLog = newNodeLog(t, s, rec, nodelog.Options{TierAge: 1000 * time.Hour})
	}
	lg, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	type cellDB struct {
		cl durability.CellLog
		d  *pageDB
	}
	cs := make([]cellDB, cells)
	r := rand.New(rand.NewPCG(21, 500))
	for i := range cs {
		name := fmt.Sprintf("counter-%04d", i)
		own(t, mem, name, "node_a", 2)
		d := newPageDB(512, true)
		cl, err := lg.Open(ctx, openReq(name, 2, d, false))
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = cellDB{cl, d}
		d.mutate(r)
		if err := wait(t, appendCommit(t, cl, d, 1)); err != nil {
			t.Fatal(err)
		}
	}
	before := s.count()
	futures := make([]durability.Durable, cells)
	for round := 2; round <= rounds+1; round++ {
		for i, c := range cs {
			retainMutate(c.d, r)
			futures[i] = appendCommit(t, c.cl, c.d, uint64(round))
		}
		for _, f := range futures {
			if err := wait(t, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range cs {
		if err := c.cl.Close(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	return s.count().since(before), cells * rounds
}

// TestNodeLogPutsPerWriteWithRetention: issue 21's goal (at most 0.1
// bucket PUTs per acknowledged write with many busy cells) holds with the
// retention window on, tiering and the ladder's compaction counted: 100
// cells written 160 times each through the node log, every row tiered by
// the last close. Tiering one file per row (each a ladder position) would
// cost over one PUT per write.
func TestNodeLogPutsPerWriteWithRetention(t *testing.T) {
	n, writes := busyCells(t, 100, 160, true, DefaultRetention)
	w := float64(writes)
	t.Logf("%d writes: %.3f PUTs per write (bundles %.3f, cells' prefixes %.3f, other %.3f), %.3f GETs, %.3f DELETEs, %.4f LISTs",
		writes, float64(n.puts())/w, float64(n.bundles)/w, float64(n.cellPuts)/w, float64(n.otherPuts)/w, float64(n.gets)/w, float64(n.deletes)/w, float64(n.lists)/w)
	if p := float64(n.puts()) / w; p > 0.1 {
		t.Fatalf("%.3f PUTs per acknowledged write with the node log and a retention window, want at most 0.1", p)
	}
	if g := float64(n.gets) / w; g > 0.1 {
		t.Fatalf("%.3f GETs per acknowledged write with the node log and a retention window, want at most 0.1", g)
	}
}

// BenchmarkBusyCellsRequests reports the requests per acknowledged write
// of busyCells, per mode, with and without the retention window (one
// history per run, whatever b.N is):
//
//	go test -run '^$' -bench BusyCellsRequests -benchtime 1x ./core/ltxlog/
func BenchmarkBusyCellsRequests(b *testing.B) {
	for _, mode := range []string{"per-cell", "node-log"} {
		for _, window := range []string{"window", "no-window"} {
			b.Run(mode+"/"+window, func(b *testing.B) {
				ret := DefaultRetention
				if window == "no-window" {
					ret = -1
				}
				for range b.N {
					n, writes := busyCells(b, 100, 160, mode == "node-log", ret)
					w := float64(writes)
					b.ReportMetric(float64(n.puts())/w, "puts/write")
					b.ReportMetric(float64(n.cellPuts)/w, "cell-puts/write")
					b.ReportMetric(float64(n.gets)/w, "gets/write")
					b.ReportMetric(float64(n.deletes)/w, "deletes/write")
					b.ReportMetric(float64(n.lists)/w, "lists/write")
				}
			})
		}
	}
}
