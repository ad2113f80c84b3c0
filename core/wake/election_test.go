package wake

import "testing"

func TestDecideElection(t *testing.T) {
	const now = 10_000
	for _, tc := range []struct {
		name string
		rec  *WakerRecord
		want ElectionAction
	}{
		{"absent", nil, Claim},
		{"ours, live", &WakerRecord{"me", now + 1}, Renew},
		{"ours, expired", &WakerRecord{"me", now - 1}, Renew},
		{"other, live", &WakerRecord{"other", now + 1}, Standby},
		{"other, expires now", &WakerRecord{"other", now}, TakeOver}, // <=, not <
		{"other, expired", &WakerRecord{"other", 0}, TakeOver},
		{"empty node, live", &WakerRecord{"", now + 1}, Standby},
	} {
		got := DecideElection(tc.rec, "me", now)
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if got.Elects() != (tc.want != Standby) {
			t.Errorf("%s: Elects() = %v", tc.name, got.Elects())
		}
		if got.String() == "?" {
			t.Errorf("%s: no name for %d", tc.name, got)
		}
	}
}

func TestRenewDue(t *testing.T) {
	const ttl = 180_000 // three 60 s ticks
	written := uint64(1_000_000)
	rec := WakerRecord{Node: "me", ExpiresMs: written + ttl}
	for _, tc := range []struct {
		now  uint64
		want bool
	}{
		{written, false},
		{written + 59_999, false},
		{written + 60_000, true}, // TTL/3 after the write
		{written + ttl, true},
		{written + 10*ttl, true},
	} {
		if got := RenewDue(rec, tc.now, ttl); got != tc.want {
			t.Errorf("RenewDue(written+%d) = %v, want %v", tc.now-written, got, tc.want)
		}
	}
	// An expiry smaller than the TTL cannot underflow.
	if !RenewDue(WakerRecord{ExpiresMs: 5}, 0, ttl) {
		t.Error("a tiny expiry is not due")
	}
}
