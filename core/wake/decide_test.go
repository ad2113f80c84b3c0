package wake

import (
	"errors"
	"slices"
	"testing"

	"github.com/cellb/cellb/core/layout"
)

func TestDecideRetire(t *testing.T) {
	ours := Retired{Identity: Identity{5, 10}, AtMs: ms(1000)}
	for _, tc := range []struct {
		name     string
		stored   *Retired
		ours     Retired
		write    bool
		conflict bool
	}{
		{"absent: create", nil, ours, true, false},
		{"older epoch: swap", &Retired{Identity{4, 99}, ms(1)}, ours, true, false},
		{"older sequence: swap", &Retired{Identity{5, 9}, nil}, ours, true, false},
		{"same, same at_ms", &Retired{Identity{5, 10}, ms(1000)}, ours, false, false},
		{"same, both null", &Retired{Identity{5, 10}, nil}, Retired{Identity{5, 10}, nil}, false, false},
		{"same, other at_ms", &Retired{Identity{5, 10}, ms(1001)}, ours, false, true},
		{"same, stored null", &Retired{Identity{5, 10}, nil}, ours, false, true},
		{"same, ours null", &Retired{Identity{5, 10}, ms(1000)}, Retired{Identity{5, 10}, nil}, false, true},
		{"newer sequence wins", &Retired{Identity{5, 11}, ms(1)}, ours, false, false},
		{"newer epoch wins", &Retired{Identity{6, 0}, nil}, ours, false, false},
	} {
		write, err := DecideRetire(tc.stored, tc.ours)
		if write != tc.write {
			t.Errorf("%s: write = %v, want %v", tc.name, write, tc.write)
		}
		var ce *RetireConflictError
		if got := errors.As(err, &ce) && errors.Is(err, ErrRetireConflict); got != tc.conflict || (err != nil) != tc.conflict {
			t.Errorf("%s: err = %v, want conflict %v", tc.name, err, tc.conflict)
		}
		if ce != nil && (ce.Identity != tc.ours.Identity || ce.Error() == "") {
			t.Errorf("%s: %+v", tc.name, ce)
		}
	}
}

func TestMayRetire(t *testing.T) {
	id := Identity{5, 10}
	for _, tc := range []struct {
		own  *layout.OwnRecord
		want bool
	}{
		{&layout.OwnRecord{Node: "me", Epoch: 5}, true},
		{nil, false},
		{&layout.OwnRecord{Node: "", Epoch: 5}, false},
		{&layout.OwnRecord{Node: "other", Epoch: 5}, false},
		{&layout.OwnRecord{Node: "me", Epoch: 6}, false},
		{&layout.OwnRecord{Node: "me", Epoch: 4}, false},
	} {
		if got := MayRetire("me", id, tc.own); got != tc.want {
			t.Errorf("MayRetire(%+v) = %v, want %v", tc.own, got, tc.want)
		}
	}
}

func TestSupersededEntryKey(t *testing.T) {
	ours := Retired{Identity: Identity{5, 10}, AtMs: ms(1000)}
	for _, tc := range []struct {
		name     string
		previous *Retired
		want     string
	}{
		{"no previous", nil, ""},
		{"previous had no alarm", &Retired{Identity{5, 9}, nil}, ""},
		{"previous is older", &Retired{Identity{5, 9}, ms(1_709_210_070_000)},
			"wake/entries/2024-02-29T12:34/Room:abc/0000000000000005-0000000000000009"},
		{"previous is ours", &Retired{Identity{5, 10}, ms(1000)}, ""},
		{"previous is newer", &Retired{Identity{5, 11}, ms(1000)}, ""},
	} {
		key, ok := SupersededEntryKey("Room:abc", tc.previous, ours)
		if key != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: = %q, %v; want %q", tc.name, key, ok, tc.want)
		}
	}
}

func TestDecideWake(t *testing.T) {
	const now = 10_000
	live := &layout.NodeLease{Node: "other", ExpiresMs: now + 1}
	expired := &layout.NodeLease{Node: "other", ExpiresMs: now} // expires_ms <= now is dead
	mine := &layout.OwnRecord{Node: "me", Epoch: 3}
	theirs := &layout.OwnRecord{Node: "other", Epoch: 3}
	released := &layout.OwnRecord{Node: "", Epoch: 3}
	for _, tc := range []struct {
		name       string
		own        *layout.OwnRecord
		lease      *layout.NodeLease
		elected    bool
		notElected bool
	}{
		{"ours", mine, nil, true, true},
		{"ours, even with a lease passed", mine, live, true, true},
		{"unowned", nil, nil, true, false},
		{"released", released, nil, true, false},
		{"owner lease missing", theirs, nil, true, false},
		{"owner lease expired", theirs, expired, true, false},
		{"owner live", theirs, live, false, false},
	} {
		if got := DecideWake("me", true, tc.own, tc.lease, now); got != tc.elected {
			t.Errorf("%s, elected: %v, want %v", tc.name, got, tc.elected)
		}
		if got := DecideWake("me", false, tc.own, tc.lease, now); got != tc.notElected {
			t.Errorf("%s, not elected: %v, want %v", tc.name, got, tc.notElected)
		}
	}
}

func TestDuePrefixes(t *testing.T) {
	now := int64(1_709_210_070_000) // 2024-02-29T12:34:30
	listed := []string{
		"wake/entries/2024-02-29T12:35/",  // next minute: not yet
		"wake/entries/2024-02-29T12:34/",  // this minute: due
		"wake/entries/1970-01-01T00:00/",  // seeds: due
		"wake/entries/2024-02-29T12:33/",  // due
		"wake/entries/2024-02-29T12:33/",  // duplicate
		"wake/entries/2024-02-30T12:33/",  // no such day
		"wake/entries/2024-02-29T12:33",   // no slash
		"wake/entries/2024-02-29T12:33//", // two slashes
		"wake/entries/migration/",
		"wake/2024-02-29T12:33/", // legacy layout
		"wake/entries/9999-12-31T23:59/",
		"",
	}
	want := []string{
		"wake/entries/1970-01-01T00:00/",
		"wake/entries/2024-02-29T12:33/",
		"wake/entries/2024-02-29T12:34/",
	}
	if got := DuePrefixes(listed, now); !slices.Equal(got, want) {
		t.Errorf("DuePrefixes = %q\nwant %q", got, want)
	}
	// The boundary: a minute is due from its first millisecond.
	start := int64(1_709_210_040_000)
	if got := DuePrefixes([]string{"wake/entries/2024-02-29T12:34/"}, start-1); len(got) != 0 {
		t.Errorf("due a millisecond early: %q", got)
	}
	if got := DuePrefixes([]string{"wake/entries/2024-02-29T12:34/"}, start); len(got) != 1 {
		t.Errorf("not due at its first millisecond: %q", got)
	}
	if got := DuePrefixes(nil, now); len(got) != 0 {
		t.Errorf("DuePrefixes(nil) = %q", got)
	}
}
