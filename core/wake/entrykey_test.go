package wake

import (
	"errors"
	"strings"
	"testing"
)

func TestEntryKey(t *testing.T) {
	id := Identity{7, 42}
	if got, want := EntryKey("Room:abc", 1_709_210_070_000, id), "wake/entries/2024-02-29T12:34/Room:abc/0000000000000007-000000000000002a"; got != want {
		t.Errorf("EntryKey = %q, want %q", got, want)
	}
	if got, want := MigrationSeedKey("Room:abc"), "wake/entries/1970-01-01T00:00/Room:abc/migration"; got != want {
		t.Errorf("MigrationSeedKey = %q, want %q", got, want)
	}
}

func TestParseEntryKey(t *testing.T) {
	ok := map[string]EntryRef{
		"wake/entries/2024-02-29T12:34/Room:abc/0000000000000007-000000000000002a": {
			Minute: "2024-02-29T12:34", MinuteMs: 1_709_210_040_000, Cell: "Room:abc", Identity: Identity{7, 42},
		},
		"wake/entries/1970-01-01T00:00/Room:abc/migration": {
			Minute: "1970-01-01T00:00", MinuteMs: 0, Cell: "Room:abc", Seed: true,
		},
		// celld's fence admits a cell without ':' and every fence byte.
		"wake/entries/2026-05-30T02:46/a.b_c-d$e:f:g/0000000000000001-0000000000000000": {
			Minute: "2026-05-30T02:46", MinuteMs: 1_780_109_160_000, Cell: "a.b_c-d$e:f:g", Identity: Identity{1, 0},
		},
		"wake/entries/2026-05-30T02:46/" + strings.Repeat("x", 255) + "/0000000000000001-0000000000000000": {
			Minute: "2026-05-30T02:46", MinuteMs: 1_780_109_160_000, Cell: strings.Repeat("x", 255), Identity: Identity{1, 0},
		},
	}
	for key, want := range ok {
		got, err := ParseEntryKey(key)
		if err != nil {
			t.Errorf("ParseEntryKey(%q): %v", key, err)
			continue
		}
		if got != want {
			t.Errorf("ParseEntryKey(%q) = %+v, want %+v", key, got, want)
		}
		if got.Key() != key {
			t.Errorf("ParseEntryKey(%q).Key() = %q", key, got.Key())
		}
	}
	const good = "wake/entries/2024-02-29T12:34/Room:abc/0000000000000007-000000000000002a"
	// Each is one change away from an accepted key.
	bad := []string{
		"",
		"wake/entries/",
		strings.Replace(good, "wake/entries/", "wake/entrie/", 1),
		strings.Replace(good, "wake/entries/", "wake/", 1), // the legacy v0.3 layout
		strings.Replace(good, "wake/entries/", "/wake/entries/", 1),
		good + "/",
		good + "/x",
		"wake/entries/2024-02-29T12:34/Room:abc",
		"wake/entries/2024-02-29T12:34//0000000000000007-000000000000002a",
		strings.Replace(good, "2024-02-29", "2023-02-29", 1), // no such day
		strings.Replace(good, "12:34", "12:60", 1),
		strings.Replace(good, "T12", " 12", 1),
		strings.Replace(good, "Room:abc", "Room abc", 1),
		strings.Replace(good, "Room:abc", "Room/abc", 1),
		strings.Replace(good, "Room:abc", "..", 1),
		strings.Replace(good, "Room:abc", ".", 1),
		strings.Replace(good, "Room:abc", "Rööm:abc", 1),
		strings.Replace(good, "Room:abc", strings.Repeat("x", 256), 1),
		strings.Replace(good, "0000000000000007-", "0000000000000000-", 1), // epoch 0
		strings.Replace(good, "002a", "002A", 1),
		strings.Replace(good, "0000000000000007-", "000000000000007-", 1),
		strings.Replace(good, "0000000000000007-000000000000002a", "migration", 1), // seed leaf outside 1970
		"wake/entries/1970-01-01T00:01/Room:abc/migration",
		"wake/entries/1970-01-01T00:00/Room:abc/Migration",
		"wake/entries/1970-01-01T00:00/Room:abc/migration/",
	}
	for _, key := range bad {
		_, err := ParseEntryKey(key)
		var ke *KeyError
		if !errors.As(err, &ke) || !errors.Is(err, ErrMalformedKey) || ke.Key != key {
			t.Errorf("ParseEntryKey(%q) = %v, want a *KeyError for it", key, err)
		}
	}
}

func TestCellKeyProblemMatchesFence(t *testing.T) {
	for c := 0; c < 256; c++ {
		allowed := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.:$", byte(c)) >= 0
		key := "A" + string([]byte{byte(c)})
		if got := cellKeyProblem(key) == ""; got != allowed {
			t.Errorf("byte %#x: valid = %v, want %v", c, got, allowed)
		}
	}
	for _, key := range []string{"", ".", ".."} {
		if cellKeyProblem(key) == "" {
			t.Errorf("%q accepted", key)
		}
	}
	for _, key := range []string{"...", ".a", "a", ":", "$"} {
		if p := cellKeyProblem(key); p != "" {
			t.Errorf("%q rejected: %s", key, p)
		}
	}
}
