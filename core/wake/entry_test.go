package wake

import (
	"errors"
	"testing"

	"github.com/cellb/cellb/core/layout"
)

const (
	entryKey = "wake/entries/2024-02-29T12:34/Room:abc/0000000000000007-000000000000002a"
	seedKey  = "wake/entries/1970-01-01T00:00/Room:abc/migration"
)

var (
	entry = Entry{Cell: "Room:abc", DueMs: 1_709_210_070_000, Identity: Identity{7, 42}}
	seed  = Entry{Cell: "Room:abc", MigrationSeed: true}
)

// The goldens are what celld writes: serde_json::to_vec of a json! object,
// whose members come out sorted (celld builds serde_json without
// preserve_order).
func TestEntryEncodeGolden(t *testing.T) {
	for _, tc := range []struct {
		e    Entry
		key  string
		want string
	}{
		{entry, entryKey, `{"cell":"Room:abc","due_ms":1709210070000,"format":2,"identity":"0000000000000007-000000000000002a"}`},
		{seed, seedKey, `{"cell":"Room:abc","format":2,"migration_seed":true}`},
		{Entry{Cell: "C:x", DueMs: 0, Identity: Identity{1, 0}}, "wake/entries/1970-01-01T00:00/C:x/0000000000000001-0000000000000000",
			`{"cell":"C:x","due_ms":0,"format":2,"identity":"0000000000000001-0000000000000000"}`},
	} {
		if got := string(tc.e.Encode()); got != tc.want {
			t.Errorf("Encode() = %s\nwant      %s", got, tc.want)
		}
		if got := tc.e.Key(); got != tc.key {
			t.Errorf("Key() = %q, want %q", got, tc.key)
		}
		back, err := DecodeEntry(tc.key, []byte(tc.want))
		if err != nil || back != tc.e {
			t.Errorf("DecodeEntry(golden) = %+v, %v; want %+v", back, err, tc.e)
		}
	}
}

func TestDecodeEntryAcceptsAnyOrderAndSpacing(t *testing.T) {
	for key, body := range map[string]string{
		entryKey: ` { "format" : 2 , "identity":"0000000000000007-000000000000002a", "due_ms": 1709210070000,"cell":"Room:abc" }` + "\n",
		seedKey:  `{"format": 2, "cell": "Room:abc", "migration_seed": true}`, // as a Python test harness writes it
	} {
		if _, err := DecodeEntry(key, []byte(body)); err != nil {
			t.Errorf("DecodeEntry(%s): %v", body, err)
		}
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	const (
		c  = `"cell":"Room:abc"`
		d  = `"due_ms":1709210070000`
		f  = `"format":2`
		id = `"identity":"0000000000000007-000000000000002a"`
	)
	obj := func(members ...string) string {
		s := "{"
		for i, m := range members {
			if i > 0 {
				s += ","
			}
			s += m
		}
		return s + "}"
	}
	for _, tc := range []struct {
		name, key, body string
	}{
		{"format 1", entryKey, obj(c, d, `"format":1`, id)},
		{"format 3", entryKey, obj(c, d, `"format":3`, id)},
		{"format as string", entryKey, obj(c, d, `"format":"2"`, id)},
		{"format as float", entryKey, obj(c, d, `"format":2.0`, id)},
		{"format as exponent", entryKey, obj(c, d, `"format":2e0`, id)},
		{"format missing", entryKey, obj(c, d, id)},
		{"cell missing", entryKey, obj(d, f, id)},
		{"cell null", entryKey, obj(`"cell":null`, d, f, id)},
		{"cell number", entryKey, obj(`"cell":1`, d, f, id)},
		{"due_ms missing", entryKey, obj(c, f, id)},
		{"due_ms negative", entryKey, obj(c, `"due_ms":-1`, f, id)},
		{"due_ms float", entryKey, obj(c, `"due_ms":1709210070000.0`, f, id)},
		{"due_ms string", entryKey, obj(c, `"due_ms":"1709210070000"`, f, id)},
		{"due_ms too big", entryKey, obj(c, `"due_ms":9223372036854775808`, f, id)},
		{"identity missing", entryKey, obj(c, d, f)},
		{"identity epoch 0", entryKey, obj(c, d, f, `"identity":"0000000000000000-000000000000002a"`)},
		{"identity uppercase", entryKey, obj(c, d, f, `"identity":"0000000000000007-000000000000002A"`)},
		{"unknown member", entryKey, obj(c, d, f, id, `"x":1`)},
		{"duplicate member", entryKey, obj(c, d, f, id, f)},
		{"duplicate via escape", entryKey, obj(c, d, f, id, `"\u0066ormat":2`)},
		{"cell differs from key", entryKey, obj(`"cell":"Room:abd"`, d, f, id)},
		{"identity differs from key", entryKey, obj(c, d, f, `"identity":"0000000000000007-000000000000002b"`)},
		{"due_ms in another minute", entryKey, obj(c, `"due_ms":1709210100000`, f, id)},
		{"real body under seed key", seedKey, obj(c, `"due_ms":0`, f, id)},
		{"seed body under real key", entryKey, obj(c, f, `"migration_seed":true`)},
		{"seed false", seedKey, obj(c, f, `"migration_seed":false`)},
		{"seed null", seedKey, obj(c, f, `"migration_seed":null`)},
		{"seed with due_ms", seedKey, obj(c, `"due_ms":0`, f, `"migration_seed":true`)},
		{"seed with identity", seedKey, obj(c, f, `"identity":"0000000000000001-0000000000000000"`, `"migration_seed":true`)},
		{"trailing data", entryKey, obj(c, d, f, id) + "{}"},
		{"trailing garbage", entryKey, obj(c, d, f, id) + "x"},
		{"array", entryKey, `["Room:abc",1709210070000,2,"0000000000000007-000000000000002a"]`},
		{"empty", entryKey, ``},
		{"null", entryKey, `null`},
		{"invalid UTF-8", entryKey, "{\"cell\":\"Room:abc\xff\"," + d + "," + f + "," + id + "}"},
		{"bad key", "wake/entries/x/Room:abc/0000000000000007-000000000000002a", obj(c, d, f, id)},
	} {
		_, err := DecodeEntry(tc.key, []byte(tc.body))
		var re *layout.RecordError
		if !errors.As(err, &re) || !errors.Is(err, layout.ErrMalformedRecord) || re.Key != tc.key {
			t.Errorf("%s: DecodeEntry(%s) = %v, want a *layout.RecordError", tc.name, tc.body, err)
		}
	}
}
