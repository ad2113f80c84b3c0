package wake

import (
	"errors"
	"testing"
)

func TestIdentityString(t *testing.T) {
	for _, tc := range []struct {
		id   Identity
		want string
	}{
		{Identity{}, "0000000000000000-0000000000000000"},
		{Identity{7, 42}, "0000000000000007-000000000000002a"},
		{Identity{^uint64(0), ^uint64(0)}, "ffffffffffffffff-ffffffffffffffff"},
	} {
		if got := tc.id.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestParseIdentity(t *testing.T) {
	for _, s := range []string{
		"0000000000000001-0000000000000000",
		"0000000000000007-000000000000002a",
		"ffffffffffffffff-ffffffffffffffff",
	} {
		id, err := ParseIdentity(s)
		if err != nil {
			t.Errorf("ParseIdentity(%q): %v", s, err)
			continue
		}
		if id.String() != s {
			t.Errorf("ParseIdentity(%q) = %v, which renders differently", s, id)
		}
	}
	// Each is a near miss of an accepted identity: a parser that let any of
	// them through would classify keys celld leaves alone.
	for _, s := range []string{
		"",
		"0000000000000000-0000000000000001",  // epoch 0
		"0000000000000007-000000000000002A",  // uppercase
		"000000000000007-000000000000002a",   // 15 digits
		"00000000000000007-000000000000002a", // 17 digits
		"0000000000000007_000000000000002a",  // wrong separator
		"0000000000000007-00000000000002a",   // short sequence
		"0000000000000007-000000000000002a ", // trailing space
		"+000000000000007-000000000000002a",  // sign
		"000000000000000g-000000000000002a",  // not hex
		"0x00000000000007-000000000000002a",
		"7-2a",
		"migration",
	} {
		_, err := ParseIdentity(s)
		var ie *IdentityError
		if !errors.As(err, &ie) {
			t.Errorf("ParseIdentity(%q) = %v, want *IdentityError", s, err)
		}
	}
}

func TestIdentityCompare(t *testing.T) {
	ordered := []Identity{{0, 0}, {0, 5}, {1, 0}, {1, 1}, {1, ^uint64(0)}, {2, 0}, {^uint64(0), 0}}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestIdentityIsZero(t *testing.T) {
	if !(Identity{}).IsZero() {
		t.Error("(0,0) is not zero")
	}
	for _, id := range []Identity{{0, 1}, {1, 0}} {
		if id.IsZero() {
			t.Errorf("%v is zero", id)
		}
	}
}
