package fleet

import (
	"testing"
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

func TestDecideAcquire(t *testing.T) {
	live := &layout.NodeLease{Node: "b", ExpiresMs: 2000, Addr: "h:1"}
	dead := &layout.NodeLease{Node: "b", ExpiresMs: 1000, Addr: "h:1"}
	deadWithLog := &layout.NodeLease{Node: "b", ExpiresMs: 999, Log: &layout.NodeLog{State: "open"}}
	sealed := &layout.NodeLease{Node: "b", ExpiresMs: 999, Log: &layout.NodeLog{State: "sealed"}}
	rec := func(node string, e uint64) *layout.OwnRecord { return &layout.OwnRecord{Node: node, Epoch: e} }
	cases := []struct {
		name string
		s    AcquireState
		want ActionKind
		rec  layout.OwnRecord
	}{
		{"absent, unlisted", AcquireState{}, ListLTX, layout.OwnRecord{}},
		{"absent, no ltx", AcquireState{LTXListed: true}, Create, layout.OwnRecord{Node: "a", Epoch: 1}},
		{"absent, ltx", AcquireState{LTXListed: true, NewestLTXEpoch: 4}, RecordLost, layout.OwnRecord{}},
		{"self, unlisted", AcquireState{Own: rec("a", 3)}, ListLTX, layout.OwnRecord{}},
		{"released, unlisted", AcquireState{Own: rec("", 3)}, ListLTX, layout.OwnRecord{}},
		{"self", AcquireState{Own: rec("a", 3), LTXListed: true, NewestLTXEpoch: 3}, Swap, layout.OwnRecord{Node: "a", Epoch: 4}},
		{"released", AcquireState{Own: rec("", 9), LTXListed: true, NewestLTXEpoch: 8}, Swap, layout.OwnRecord{Node: "a", Epoch: 10}},
		{"released, no log", AcquireState{Own: rec("", 9), LTXListed: true}, Swap, layout.OwnRecord{Node: "a", Epoch: 10}},
		{"self, record behind the log", AcquireState{Own: rec("a", 3), LTXListed: true, NewestLTXEpoch: 7}, Swap, layout.OwnRecord{Node: "a", Epoch: 8}},
		{"released, record behind the log", AcquireState{Own: rec("", 3), LTXListed: true, NewestLTXEpoch: 4}, Swap, layout.OwnRecord{Node: "a", Epoch: 5}},
		{"other, dead, unlisted", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true}, ListLTX, layout.OwnRecord{}},
		{"other, dead, record behind the log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, LTXListed: true, NewestLTXEpoch: 6}, Swap, layout.OwnRecord{Node: "a", Epoch: 7}},
		{"other, live, record behind the log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: live, LTXListed: true, NewestLTXEpoch: 6}, OwnedElsewhere, layout.OwnRecord{}},
		{"other, unread", AcquireState{Own: rec("b", 2)}, ReadOwnerLease, layout.OwnRecord{}},
		{"other, live", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: live}, OwnedElsewhere, layout.OwnRecord{}},
		{"other, expiring exactly now", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: dead, LTXListed: true, NewestLTXEpoch: 2}, Swap, layout.OwnRecord{Node: "a", Epoch: 3}},
		{"other, lease missing", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, LTXListed: true, NewestLTXEpoch: 2}, Swap, layout.OwnRecord{Node: "a", Epoch: 3}},
		{"other, dead with open log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: deadWithLog}, OwnerNeedsRecovery, layout.OwnRecord{}},
		{"other, dead with sealed log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: sealed, LTXListed: true, NewestLTXEpoch: 2}, Swap, layout.OwnRecord{Node: "a", Epoch: 3}},
	}
	for _, c := range cases {
		c.s.Self, c.s.NowMs, c.s.OwnVersion = "a", 1000, "v1"
		got := DecideAcquire(c.s)
		if got.Kind != c.want {
			t.Errorf("%s: %v, want %v", c.name, got.Kind, c.want)
			continue
		}
		if c.want == Create || c.want == Swap {
			if got.Record != c.rec {
				t.Errorf("%s: record %+v, want %+v", c.name, got.Record, c.rec)
			}
			wantCond := store.IfVersion("v1")
			if c.want == Create {
				wantCond = store.IfAbsent
			}
			if got.Cond != wantCond {
				t.Errorf("%s: condition %v", c.name, got.Cond)
			}
		}
	}
}

func TestReleaseAndReconcile(t *testing.T) {
	if !MayRelease("a", 3, &layout.OwnRecord{Node: "a", Epoch: 3}) || MayRelease("a", 3, &layout.OwnRecord{Node: "a", Epoch: 4}) || MayRelease("a", 3, &layout.OwnRecord{Node: "b", Epoch: 3}) || MayRelease("a", 3, nil) {
		t.Fatal("MayRelease")
	}
	if !Reconciled(layout.OwnRecord{Node: "a", Epoch: 2}, &layout.OwnRecord{Node: "a", Epoch: 2}) || Reconciled(layout.OwnRecord{Node: "a", Epoch: 2}, &layout.OwnRecord{Node: "b", Epoch: 2}) || Reconciled(layout.OwnRecord{Node: "a", Epoch: 2}, nil) {
		t.Fatal("Reconciled")
	}
}

// TestWithinDeadline: a node may act strictly before its fence deadline,
// which is the send time of its last renewal plus TTL minus the margin;
// at the deadline itself it fences.
func TestWithinDeadline(t *testing.T) {
	sent := time.UnixMilli(1_000_000)
	deadline := FenceDeadline(sent, 10*time.Second, 2*time.Second)
	if !deadline.Equal(sent.Add(8 * time.Second)) {
		t.Fatalf("FenceDeadline = %v, want the send time plus 8 s", deadline)
	}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{
		{sent, true},
		{deadline.Add(-time.Nanosecond), true},
		{deadline, false},
		{deadline.Add(time.Hour), false},
	} {
		if got := WithinDeadline(c.now, deadline); got != c.want {
			t.Errorf("WithinDeadline(deadline%+v) = %v, want %v", c.now.Sub(deadline), got, c.want)
		}
	}
}
