package wake

import (
	"errors"
	"testing"
	"time"

	"github.com/cellb/cellb/core/layout"
)

// The golden is celld's format!("{{\"node\":{node:?},\"expires_ms\":{expires}}}").
func TestWakerEncodeGolden(t *testing.T) {
	r := WakerRecord{Node: "node_3f1c0a", ExpiresMs: 1_780_109_211_091}
	const want = `{"node":"node_3f1c0a","expires_ms":1780109211091}`
	if got := string(r.Encode()); got != want {
		t.Errorf("Encode() = %s, want %s", got, want)
	}
	if back, err := DecodeWaker([]byte(want)); err != nil || back != r {
		t.Errorf("DecodeWaker = %+v, %v", back, err)
	}
}

func TestDecodeWaker(t *testing.T) {
	for body, want := range map[string]WakerRecord{
		`{"expires_ms":5,"node":"a"}`:                   {Node: "a", ExpiresMs: 5},
		`{"node":"a","expires_ms":5,"extra":[1,{}]}`:    {Node: "a", ExpiresMs: 5}, // celld ignores unknown members
		`{"node":"","expires_ms":0}`:                    {Node: "", ExpiresMs: 0},
		`{"node":"a","expires_ms":9223372036854775807}`: {Node: "a", ExpiresMs: 1<<63 - 1},
	} {
		if got, err := DecodeWaker([]byte(body)); err != nil || got != want {
			t.Errorf("DecodeWaker(%s) = %+v, %v; want %+v", body, got, err, want)
		}
	}
	for _, body := range []string{
		`{"node":"a"}`,
		`{"expires_ms":5}`,
		`{"node":null,"expires_ms":5}`,
		`{"node":1,"expires_ms":5}`,
		`{"node":"a","expires_ms":null}`,
		`{"node":"a","expires_ms":-1}`,
		`{"node":"a","expires_ms":5.0}`,
		`{"node":"a","expires_ms":"5"}`,
		`{"node":"a","expires_ms":9223372036854775808}`, // above celld's i64
		`{"node":"a","expires_ms":5,"node":"b"}`,
		`{"node":"a","expires_ms":5}x`,
		`[]`,
	} {
		_, err := DecodeWaker([]byte(body))
		var re *layout.RecordError
		if !errors.As(err, &re) || re.Key != layout.WakerKey {
			t.Errorf("DecodeWaker(%s) = %v, want a *layout.RecordError", body, err)
		}
	}
}

func TestRoleTTL(t *testing.T) {
	if DefaultTick != time.Minute {
		t.Errorf("DefaultTick = %v", DefaultTick)
	}
	if got := RoleTTL(DefaultTick); got != 3*time.Minute {
		t.Errorf("RoleTTL(DefaultTick) = %v", got)
	}
}
