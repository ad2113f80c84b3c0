package fleet

import (
	"testing"
	"time"

	"github.com/cellb/cellb/core/store"
)

func TestDecideAcquire(t *testing.T) {
	live := &NodeLease{Node: "b", ExpiresMs: 2000, Addr: "h:1"}
	dead := &NodeLease{Node: "b", ExpiresMs: 1000, Addr: "h:1"}
	deadWithLog := &NodeLease{Node: "b", ExpiresMs: 999, Log: &NodeLog{State: "open"}}
	sealed := &NodeLease{Node: "b", ExpiresMs: 999, Log: &NodeLog{State: "sealed"}}
	rec := func(node string, e uint64) *OwnRecord { return &OwnRecord{Node: node, Epoch: e} }
	cases := []struct {
		name string
		s    AcquireState
		want ActionKind
		rec  OwnRecord
	}{
		{"absent, unlisted", AcquireState{}, ListLTX, OwnRecord{}},
		{"absent, no ltx", AcquireState{LTXListed: true}, Create, OwnRecord{"a", 1}},
		{"absent, ltx", AcquireState{LTXListed: true, NewestLTXEpoch: 4}, RecordLost, OwnRecord{}},
		{"self, unlisted", AcquireState{Own: rec("a", 3)}, ListLTX, OwnRecord{}},
		{"released, unlisted", AcquireState{Own: rec("", 3)}, ListLTX, OwnRecord{}},
		{"self", AcquireState{Own: rec("a", 3), LTXListed: true, NewestLTXEpoch: 3}, Swap, OwnRecord{"a", 4}},
		{"released", AcquireState{Own: rec("", 9), LTXListed: true, NewestLTXEpoch: 8}, Swap, OwnRecord{"a", 10}},
		{"released, no log", AcquireState{Own: rec("", 9), LTXListed: true}, Swap, OwnRecord{"a", 10}},
		{"self, record behind the log", AcquireState{Own: rec("a", 3), LTXListed: true, NewestLTXEpoch: 7}, Swap, OwnRecord{"a", 8}},
		{"released, record behind the log", AcquireState{Own: rec("", 3), LTXListed: true, NewestLTXEpoch: 4}, Swap, OwnRecord{"a", 5}},
		{"other, dead, unlisted", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true}, ListLTX, OwnRecord{}},
		{"other, dead, record behind the log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, LTXListed: true, NewestLTXEpoch: 6}, Swap, OwnRecord{"a", 7}},
		{"other, live, record behind the log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: live, LTXListed: true, NewestLTXEpoch: 6}, OwnedElsewhere, OwnRecord{}},
		{"other, unread", AcquireState{Own: rec("b", 2)}, ReadOwnerLease, OwnRecord{}},
		{"other, live", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: live}, OwnedElsewhere, OwnRecord{}},
		{"other, expiring exactly now", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: dead, LTXListed: true, NewestLTXEpoch: 2}, Swap, OwnRecord{"a", 3}},
		{"other, lease missing", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, LTXListed: true, NewestLTXEpoch: 2}, Swap, OwnRecord{"a", 3}},
		{"other, dead with open log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: deadWithLog}, OwnerNeedsRecovery, OwnRecord{}},
		{"other, dead with sealed log", AcquireState{Own: rec("b", 2), OwnerLeaseRead: true, OwnerLease: sealed, LTXListed: true, NewestLTXEpoch: 2}, Swap, OwnRecord{"a", 3}},
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
	if !MayRelease("a", 3, &OwnRecord{"a", 3}) || MayRelease("a", 3, &OwnRecord{"a", 4}) || MayRelease("a", 3, &OwnRecord{"b", 3}) || MayRelease("a", 3, nil) {
		t.Fatal("MayRelease")
	}
	if !Reconciled(OwnRecord{"a", 2}, &OwnRecord{"a", 2}) || Reconciled(OwnRecord{"a", 2}, &OwnRecord{"b", 2}) || Reconciled(OwnRecord{"a", 2}, nil) {
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
