package wake

import (
	"errors"
	"testing"

	"github.com/cellb/cellb/core/layout"
)

func ms(v int64) *int64 { return &v }

// The goldens are serde_json::to_vec of celld's RetirementRecord: members in
// declaration order (format, identity, at_ms), None as null.
func TestRetiredEncodeGolden(t *testing.T) {
	if got, want := layout.WakeRetiredKey("Room:abc"), "wake/retired/Room:abc.json"; got != want {
		t.Errorf("layout.WakeRetiredKey = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		r    Retired
		want string
	}{
		{Retired{Identity{7, 42}, ms(1_709_210_070_000)}, `{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":1709210070000}`},
		{Retired{Identity{7, 43}, nil}, `{"format":2,"identity":"0000000000000007-000000000000002b","at_ms":null}`},
		{Retired{Identity{1, 0}, ms(0)}, `{"format":2,"identity":"0000000000000001-0000000000000000","at_ms":0}`},
	} {
		got := tc.r.Encode()
		if string(got) != tc.want {
			t.Errorf("Encode() = %s\nwant      %s", got, tc.want)
		}
		back, err := DecodeRetired("k", got)
		if err != nil || back.Identity != tc.r.Identity || !sameAtMs(back.AtMs, tc.r.AtMs) {
			t.Errorf("DecodeRetired(%s) = %+v, %v", got, back, err)
		}
	}
}

func TestDecodeRetired(t *testing.T) {
	// serde defaults an absent Option: a certificate without at_ms is one
	// for "no alarm".
	r, err := DecodeRetired("k", []byte(`{"identity":"0000000000000007-000000000000002a","format":2}`))
	if err != nil || r.AtMs != nil || r.Identity != (Identity{7, 42}) {
		t.Errorf("without at_ms: %+v, %v", r, err)
	}
	for _, body := range []string{
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":1,"x":1}`,
		`{"format":3,"identity":"0000000000000007-000000000000002a","at_ms":1}`,
		`{"format":256,"identity":"0000000000000007-000000000000002a","at_ms":1}`,
		`{"identity":"0000000000000007-000000000000002a","at_ms":1}`,
		`{"format":2,"at_ms":1}`,
		`{"format":2,"identity":null,"at_ms":1}`,
		`{"format":2,"identity":"0000000000000000-000000000000002a","at_ms":1}`,
		`{"format":2,"identity":"0000000000000007-000000000000002A","at_ms":1}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":-1}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":"1"}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":1.0}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":-0}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":true}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":1,"at_ms":1}`,
		`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":1} x`,
		`[2,"0000000000000007-000000000000002a",1]`,
	} {
		_, err := DecodeRetired("wake/retired/Room:abc.json", []byte(body))
		var re *layout.RecordError
		if !errors.As(err, &re) || re.Key != "wake/retired/Room:abc.json" {
			t.Errorf("DecodeRetired(%s) = %v, want a *layout.RecordError", body, err)
		}
	}
}

func TestObsolete(t *testing.T) {
	cert := Retired{Identity: Identity{5, 10}, AtMs: ms(1000)}
	removed := Retired{Identity: Identity{5, 10}}
	for _, tc := range []struct {
		id   Identity
		r    Retired
		want bool
	}{
		{Identity{}, cert, true}, // a migration seed is below any certificate
		{Identity{4, 99}, cert, true},
		{Identity{5, 9}, cert, true},
		{Identity{5, 10}, cert, false}, // the certified alarm itself is live
		{Identity{5, 10}, removed, true},
		{Identity{5, 11}, cert, false},
		{Identity{5, 11}, removed, false},
		{Identity{6, 0}, cert, false},
	} {
		if got := Obsolete(tc.id, tc.r); got != tc.want {
			t.Errorf("Obsolete(%v, %v/%v) = %v, want %v", tc.id, tc.r.Identity, fmtAtMs(tc.r.AtMs), got, tc.want)
		}
	}
}
