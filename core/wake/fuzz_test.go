package wake

import (
	"encoding/json"
	"math"
	"testing"
)

// Every fuzz target checks, besides "no panic", that what a decoder accepts
// satisfies the invariants the rest of the package relies on, and that
// encoding it and decoding again gives the same value.

func FuzzParseEntryKey(f *testing.F) {
	for _, s := range []string{
		entryKey, seedKey,
		"wake/entries/1970-01-01T00:00/a/0000000000000001-0000000000000000",
		"wake/entries/-001-12-31T23:59/a/0000000000000001-0000000000000000",
		"wake/entries/2024-02-30T00:00/a/0000000000000001-0000000000000000",
		"wake/entries/1970-01-01T00:01/a/migration",
		"wake/entries/x/y/z/w", "wake/entries/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ref, err := ParseEntryKey(key)
		if err != nil {
			return
		}
		if ref.Key() != key {
			t.Fatalf("%q parsed to %+v, which renders as %q", key, ref, ref.Key())
		}
		if cellKeyProblem(ref.Cell) != "" {
			t.Fatalf("%q: invalid cell %q accepted", key, ref.Cell)
		}
		if Minute(ref.MinuteMs) != ref.Minute || ref.MinuteMs%60_000 != 0 {
			t.Fatalf("%q: minute %q / %d disagree", key, ref.Minute, ref.MinuteMs)
		}
		if ref.Seed != ref.Identity.IsZero() || ref.Seed && ref.Minute != seedMinute {
			t.Fatalf("%q: seed %v with identity %v in %s", key, ref.Seed, ref.Identity, ref.Minute)
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(entryKey, string(entry.Encode()))
	f.Add(seedKey, string(seed.Encode()))
	f.Add(entryKey, `{"format":2,"cell":"Room:abc","due_ms":1709210070000,"identity":"0000000000000007-000000000000002a","x":1}`)
	f.Add(seedKey, `{"format": 2, "cell": "Room:abc", "migration_seed": true}`)
	f.Add(entryKey, `{"cell":"Room:abc","due_ms":-0,"format":2.0,"identity":null}`)
	f.Fuzz(func(t *testing.T, key, body string) {
		e, err := DecodeEntry(key, []byte(body))
		if err != nil {
			return
		}
		if e.Key() != key {
			t.Fatalf("decoded %+v from %q, which belongs under %q", e, key, e.Key())
		}
		if e.MigrationSeed && (e.DueMs != 0 || !e.Identity.IsZero()) || !e.MigrationSeed && (e.DueMs < 0 || e.Identity.Epoch == 0) {
			t.Fatalf("decoded an impossible entry %+v", e)
		}
		enc := e.Encode()
		if !json.Valid(enc) {
			t.Fatalf("Encode() = %s is not JSON", enc)
		}
		again, err := DecodeEntry(key, enc)
		if err != nil || again != e {
			t.Fatalf("re-decoding %s: %+v, %v; want %+v", enc, again, err, e)
		}
	})
}

func FuzzDecodeRetired(f *testing.F) {
	f.Add(`{"format":2,"identity":"0000000000000007-000000000000002a","at_ms":1709210070000}`)
	f.Add(`{"format":2,"identity":"0000000000000007-000000000000002b","at_ms":null}`)
	f.Add(`{"identity":"0000000000000007-000000000000002b","format":2}`)
	f.Add(`{"format":2,"identity":"0000000000000007-000000000000002b","at_ms":-1}`)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := DecodeRetired("k", []byte(body))
		if err != nil {
			return
		}
		if r.Identity.Epoch == 0 || r.AtMs != nil && *r.AtMs < 0 {
			t.Fatalf("decoded an impossible certificate %v / %s", r.Identity, fmtAtMs(r.AtMs))
		}
		enc := r.Encode()
		if !json.Valid(enc) {
			t.Fatalf("Encode() = %s is not JSON", enc)
		}
		again, err := DecodeRetired("k", enc)
		if err != nil || again.Identity != r.Identity || !sameAtMs(again.AtMs, r.AtMs) {
			t.Fatalf("re-decoding %s: %+v, %v", enc, again, err)
		}
	})
}

func FuzzDecodeFormat(f *testing.F) {
	f.Add(`{"format":2}`)
	f.Add(`{"format":2,"migrating":true}`)
	f.Add(`{"format":2,"migrating":false}`)
	f.Add(`{"format":256}`)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := DecodeFormat([]byte(body))
		if err != nil {
			return
		}
		if r.Format < 0 || r.Format > 255 {
			t.Fatalf("decoded format %d", r.Format)
		}
		enc := r.Encode()
		if !json.Valid(enc) {
			t.Fatalf("Encode() = %s is not JSON", enc)
		}
		again, err := DecodeFormat(enc)
		if err != nil || again != r {
			t.Fatalf("re-decoding %s: %+v, %v; want %+v", enc, again, err, r)
		}
		if act, err := CheckFormat(&r, nil); (err == nil) != (r.Format == Format) || err == nil && (act == FormatResume) != r.Migrating {
			t.Fatalf("CheckFormat(%+v) = %v, %v", r, act, err)
		}
	})
}

func FuzzDecodeWaker(f *testing.F) {
	f.Add(`{"node":"node_3f1c0a","expires_ms":1780109211091}`)
	f.Add(`{"node":"a\"\\\u0001é","expires_ms":0,"x":[{}]}`)
	f.Add(`{"node":"a","expires_ms":9223372036854775808}`)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := DecodeWaker([]byte(body))
		if err != nil {
			return
		}
		if r.ExpiresMs > math.MaxInt64 {
			t.Fatalf("decoded expires_ms %d beyond celld's i64", r.ExpiresMs)
		}
		enc := r.Encode()
		if !json.Valid(enc) {
			t.Fatalf("Encode() = %s is not JSON", enc)
		}
		again, err := DecodeWaker(enc)
		if err != nil || again != r {
			t.Fatalf("re-decoding %s: %+v, %v; want %+v", enc, again, err, r)
		}
	})
}

func FuzzParseIdentity(f *testing.F) {
	f.Add("0000000000000007-000000000000002a")
	f.Add("0000000000000000-000000000000002a")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIdentity(s)
		if err != nil {
			return
		}
		if id.String() != s || id.Epoch == 0 {
			t.Fatalf("%q parsed to %v", s, id)
		}
	})
}
