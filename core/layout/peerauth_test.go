package layout

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestPeerAuthRecord(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, 32)
	rec := EncodePeerAuth(key)
	if want := `{"version":1,"key":"` + strings.Repeat("ab", 32) + `"}`; string(rec) != want {
		t.Fatalf("record %s, want %s", rec, want)
	}
	if got, err := DecodePeerAuth(rec); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("decode: %x %v", got, err)
	}
	for _, bad := range []string{
		`{"version":2,"key":"` + strings.Repeat("a", 64) + `"}`,
		`{"version":1,"key":"ABC"}`,
		`{"version":1,"key":"` + strings.Repeat("A", 64) + `"}`,
		`{"version":1,"key":"` + strings.Repeat("a", 64) + `","x":1}`,
		`{"version":1,"key":"` + strings.Repeat("a", 64) + `"} {}`,
		`nope`,
	} {
		_, err := DecodePeerAuth([]byte(bad))
		if !errors.Is(err, ErrBadPeerAuth) || !strings.HasPrefix(err.Error(), "malformed fleet/peer-auth.json: ") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func FuzzDecodePeerAuth(f *testing.F) {
	f.Add([]byte(`{"version":1,"key":"` + strings.Repeat("0f", 32) + `"}`))
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := DecodePeerAuth(data)
		if err != nil {
			if !errors.Is(err, ErrBadPeerAuth) {
				t.Fatalf("untyped: %v", err)
			}
			return
		}
		back, err := DecodePeerAuth(EncodePeerAuth(key))
		if err != nil || !bytes.Equal(back, key) || len(key) != 32 {
			t.Fatalf("key %x does not round-trip: %x %v", key, back, err)
		}
	})
}
