package cell

import (
	"errors"
	"testing"

	"github.com/cellb/cellb/core/durability"
)

// pendingSnapshot drops the commits known durable from the front, keeps
// the ones not yet known, and keeps a failed one (and everything after it)
// in front of every later reply.
func TestPendingSnapshot(t *testing.T) {
	ok1, ok2 := durability.Resolved(nil), durability.Resolved(nil)
	open := durability.NewFuture()
	inst := &instance{pending: []durability.Durable{ok1, ok2, open}}
	if snap := inst.pendingSnapshot().wait; len(snap) != 1 || snap[0] != open {
		t.Fatalf("snapshot = %v, want only the commit not yet durable", snap)
	}
	if len(inst.pending) != 1 {
		t.Fatalf("%d commits still pending, want 1 (durable ones are dropped)", len(inst.pending))
	}
	open.Resolve(nil)
	if snap := inst.pendingSnapshot().wait; len(snap) != 0 || len(inst.pending) != 0 {
		t.Fatalf("snapshot = %v, pending %d; want nothing once all are durable", snap, len(inst.pending))
	}

	failed := durability.Resolved(errors.New("upload failed"))
	after := durability.Resolved(nil)
	inst.pending = []durability.Durable{durability.Resolved(nil), failed, after}
	for i := 0; i < 2; i++ {
		snap := inst.pendingSnapshot().wait
		if len(snap) != 2 || snap[0] != failed || snap[1] != after {
			t.Fatalf("snapshot %d = %v, want the failed commit and the one after it", i+1, snap)
		}
	}
}
