package shard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// learner records the takeovers a watching Lease reports, by the cells
// whose shard each one covered.
type learner struct {
	mu    sync.Mutex
	cells []string // candidate cells, one per shard of interest
	seen  map[string]int
	ch    chan string
}

func newLearner(cells ...string) *learner {
	return &learner{cells: cells, seen: map[string]int{}, ch: make(chan string, 64)}
}

func (lr *learner) learn(ctx context.Context, owns func(string) bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for _, c := range lr.cells {
		if owns(c) {
			lr.seen[c]++
			lr.ch <- c
		}
	}
}

func (lr *learner) count(c string) int {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.seen[c]
}

// A take of a shard that another holder used since this Lease last knew
// it runs learn, for that shard's cells, before TryAcquire returns; a take
// that finds the shard as this Lease left it does not. Watch learns the
// shards free when it starts before it returns.
func TestWatchLearnsOnTakeoverBeforeTheGrant(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 4), open(t, dir, 4)
	cell := cellsIn(1, 4, 1)[0]
	other := cellsIn(2, 4, 1)[0]
	lr := newLearner(cell, other)
	ga := grantOf(t, a, cell) // a holds the cell's shard while b starts watching
	// An hour: after the first look, only takes learn here.
	if err := b.Watch(context.Background(), time.Hour, lr.learn); err != nil {
		t.Fatal(err)
	}
	if lr.count(cell) != 0 || lr.count(other) != 1 {
		t.Fatalf("Watch learned %v, want the free shard of %s once and not the one a holds", lr.seen, other)
	}
	if err := b.Watch(context.Background(), time.Hour, lr.learn); !errors.Is(err, ErrWatching) {
		t.Fatalf("second Watch: %v, want ErrWatching", err)
	}
	ga.Release(context.Background())

	g := grantOf(t, b, cell)
	if lr.count(cell) != 1 || lr.count(other) != 1 {
		t.Fatalf("after taking the shard a let go: learned %v, want the cell's shard once more", lr.seen)
	}
	g.Release(context.Background())
	g = grantOf(t, b, cell) // nobody took the shard since b let it go
	if n := lr.count(cell); n != 1 {
		t.Fatalf("learned %d times after retaking a shard nobody else held", n)
	}
	g.Release(context.Background())

	ga = grantOf(t, a, cell)
	ga.Release(context.Background())
	g = grantOf(t, b, cell)
	if n := lr.count(cell); n != 2 {
		t.Fatalf("learned %d times after a held the shard again, want 2", n)
	}
	g.Release(context.Background())
}

// A shard another Lease lets go is learned without any take here: the
// watching Lease takes it only for that, then lets it go.
func TestWatchLearnsAShardLetGoWithoutACall(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 4), open(t, dir, 4)
	cell := cellsIn(3, 4, 1)[0]
	ga := grantOf(t, a, cell)
	lr := newLearner(cell)
	if err := b.Watch(context.Background(), time.Millisecond, lr.learn); err != nil {
		t.Fatal(err)
	}
	if lr.count(cell) != 0 {
		t.Fatal("learned a shard another Lease holds")
	}
	ga.Release(context.Background())
	select {
	case <-lr.ch: // b learned the shard a let go
	case <-time.After(30 * time.Second):
		t.Fatal("b never learned the shard a let go")
	}
	// b let the shard go again: a takes it back once b's look is over.
	for {
		g, err := takeWriting(context.Background(), a, cell)
		if err == nil {
			g.Release(context.Background())
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Close ends the watching: nothing is learned after it.
	b.Close()
	n := lr.count(cell)
	grantOf(t, a, cell).Release(context.Background())
	time.Sleep(20 * time.Millisecond)
	if lr.count(cell) != n {
		t.Fatal("a closed Lease still learns")
	}
	if err := b.Watch(context.Background(), time.Millisecond, lr.learn); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close: %v", err)
	}
}

// Watching ends with its context: takes after it no longer learn.
func TestWatchEndsWithItsContext(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, 4), open(t, dir, 4)
	cell := cellsIn(0, 4, 1)[0]
	lr := newLearner(cell)
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Watch(ctx, time.Hour, lr.learn); err != nil {
		t.Fatal(err)
	}
	n := lr.count(cell) // the free shard, learned when watching began
	cancel()
	grantOf(t, a, cell).Release(context.Background())
	grantOf(t, b, cell).Release(context.Background())
	if lr.count(cell) != n {
		t.Fatalf("learned %d times after the watching ended", lr.count(cell)-n)
	}
}
