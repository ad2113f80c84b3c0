// Package admin reads a bucket the way an operator needs to see it, and
// repairs the one thing the bucket format lets an operator repair.
//
// Inspect lists the fleet's nodes (live or expired), every cell (its
// ownership record, the size and newest position of its logs, what is
// wrong with it, its alarm from the wake index) and a summary of the wake
// index. InspectCell reads one cell with its logs' epochs in detail.
// Diagnose reads one cell and plans its repair; Apply writes it.
//
// The one repair is the released ownership record at the newest epoch of
// the cell's log, {"node":"","epoch":N}: it is what a lost record must be
// replaced by (celld-bucket-format.md §5.4) and what a record behind the
// log must be raised to, so that the next take, by a CellB or a celld
// node, moves to N+1 and restores the log. It is written with a
// conditional put: create-only when the record is missing, a
// compare-and-swap on the version read otherwise. A cell a live node holds
// is never repaired.
//
// Every read goes through store.Store and every key through core/layout;
// listings follow their pages, and per-cell reads run with bounded
// concurrency (Options.Concurrency). A record that does not decode is
// reported on its cell or node (Err, a *layout.RecordError naming the key)
// and the listing goes on.
package admin

import (
	"context"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
)

// DefaultConcurrency is how many per-cell (and per-node) reads run at once
// when Options.Concurrency is 0.
const DefaultConcurrency = 8

// ProgressMinCells is the fewest cells Inspect reports progress for: fewer
// are read too fast to wait for.
const ProgressMinCells = 100

// Options tune a read of the bucket; the zero value is ready to use.
type Options struct {
	// Clock decides which leases are live (default: the real clock).
	Clock clock.Clock
	// Concurrency bounds the per-cell and per-node reads in flight
	// (DefaultConcurrency when 0 or less).
	Concurrency int
	// PageSize is the entries asked for per listing page (0: the store's
	// default, at most 1000). Every page is read whatever the size.
	PageSize int
	// Progress, if set, is called as cells are read, done of total cells,
	// when there are at least ProgressMinCells of them.
	Progress func(done, total int64)
	// Logs are the logs a cell may keep (default layout.Logs(): ltx,
	// changeset, backup).
	Logs []layout.Log
	// Verify reads every file of each cell's LTX log and checks its
	// header, pages and checksums, and that its TXIDs are the ones its
	// key names (a corrupt-file finding otherwise). Without it only
	// listings and records are read.
	Verify bool
	// LockDir, if set, is the directory a single host's processes keep
	// their node log sessions' lock files in (<data-dir>/shards/nodelog):
	// Inspect reads each session's state there (HostLog.State). Only
	// tried locks are taken, each for a moment.
	LockDir string
}

func (o Options) clock() clock.Clock { return clock.Or(o.Clock) }

func (o Options) concurrency() int {
	if o.Concurrency <= 0 {
		return DefaultConcurrency
	}
	return o.Concurrency
}

func (o Options) logs() []layout.Log {
	if len(o.Logs) == 0 {
		return layout.Logs()
	}
	return o.Logs
}

// forEach runs fn(i) for i in [0, n) with at most conc calls at once. It
// stops starting calls once ctx is done and returns ctx's error then.
func forEach(ctx context.Context, n, conc int, fn func(i int)) error {
	if conc > n {
		conc = n
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	var err error
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	return err
}

// splitCellKey splits "<Class>:<id>"; a key without ':' is all class.
func splitCellKey(cell string) (class, id string) {
	class, id, _ = strings.Cut(cell, ":")
	return class, id
}
