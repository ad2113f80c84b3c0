package cell

import (
	"testing"

	"github.com/cellb/cellb/core/durability"
)

// What a commit publishes: nothing while the _cf_WAKE sequence stays put
// (the alarm did not change), the new installation when it moved, and,
// once after opening under a new epoch, an announcement even though it
// did not move. The publication waits for the newest commit.
func TestWakeStatePublication(t *testing.T) {
	at := int64(1_000)
	var w wakeState
	w.opened(4, true)

	// The first commit after open announces the epoch, unchanged alarm
	// or not, and waits for the local commit (no log commit yet).
	p, after, ok := w.publication("Counter:x", wakeRow{epoch: 9, seq: 4})
	if !ok || !p.Announce || p.Cell != "Counter:x" || p.Epoch != 9 || p.Seq != 4 || p.AtMs != nil {
		t.Fatalf("first commit: %+v %v, want the announcement of epoch 9 at sequence 4", p, ok)
	}
	if !isDurable(after) {
		t.Fatal("with no commit handed to a log, the publication must wait for nothing")
	}

	// Announced once: a commit that leaves the alarm alone publishes
	// nothing.
	if p, _, ok := w.publication("Counter:x", wakeRow{epoch: 9, seq: 4}); ok {
		t.Fatalf("unchanged alarm published %+v", p)
	}

	// A commit that moved the sequence publishes the new installation,
	// after that commit.
	c := durability.NewFuture()
	w.committed(c)
	p, after, ok = w.publication("Counter:x", wakeRow{epoch: 9, seq: 5, atMs: &at})
	if !ok || p.Announce || p.Seq != 5 || p.AtMs == nil || *p.AtMs != at {
		t.Fatalf("changed alarm: %+v %v, want sequence 5 at %d, not an announcement", p, ok, at)
	}
	if after != durability.Durable(c) {
		t.Fatal("the publication does not wait for the commit that changed the alarm")
	}
	if _, _, ok := w.publication("Counter:x", wakeRow{epoch: 9, seq: 5, atMs: &at}); ok {
		t.Fatal("the same installation was published twice")
	}

	// Opened without a wake index to announce to: nothing until the
	// alarm changes.
	var quiet wakeState
	quiet.opened(2, false)
	if _, _, ok := quiet.publication("Counter:y", wakeRow{epoch: 1, seq: 2}); ok {
		t.Fatal("published an unchanged alarm with nothing to announce")
	}
}
