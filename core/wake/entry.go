package wake

import (
	"fmt"
	"strconv"

	"github.com/cellb/cellb/core/layout"
)

// Format is the wake-index format this package reads and writes.
const Format = 2

// Entry is the body of an alarm publication (or of a migration seed).
// Entries are plain PUTs of immutable keys: a publication is never
// rewritten, only deleted once a retirement certificate makes it obsolete.
type Entry struct {
	Cell string
	// DueMs is the alarm's due time, Unix ms (>= 0); 0 for a seed.
	DueMs int64
	// Identity is the installation; zero for a seed.
	Identity Identity
	// MigrationSeed marks celld's discovery seed, which carries neither a
	// due time nor an identity.
	MigrationSeed bool
}

// Key is the entry's key.
func (e Entry) Key() string {
	if e.MigrationSeed {
		return MigrationSeedKey(e.Cell)
	}
	return EntryKey(e.Cell, e.DueMs, e.Identity)
}

// Encode writes the body byte for byte as celld does. celld builds it with
// serde_json's json! macro, whose objects (without the preserve_order
// feature, which celld does not enable) serialize their keys sorted:
//
//	{"cell":"<cell>","due_ms":<ms>,"format":2,"identity":"<id>"}
//	{"cell":"<cell>","format":2,"migration_seed":true}
func (e Entry) Encode() []byte {
	b := make([]byte, 0, 96+len(e.Cell))
	b = append(b, `{"cell":`...)
	b = appendString(b, e.Cell)
	if e.MigrationSeed {
		return append(b, `,"format":2,"migration_seed":true}`...)
	}
	b = append(b, `,"due_ms":`...)
	b = strconv.AppendInt(b, e.DueMs, 10)
	b = append(b, `,"format":2,"identity":"`...)
	b = append(b, e.Identity.String()...)
	return append(b, `"}`...)
}

// DecodeEntry reads an entry body strictly and checks it against its key.
// celld itself never reads these bodies (LIST of the keys is its whole
// inventory), so the strictness is ours: exactly one of the two shapes celld
// writes, in any member order, format 2, due_ms >= 0, a canonical identity,
// and the same cell, identity and minute as the key.
func DecodeEntry(key string, data []byte) (Entry, error) {
	bad := func(reason string, err error) (Entry, error) {
		return Entry{}, &layout.RecordError{Key: key, Reason: reason, Err: err}
	}
	ref, err := ParseEntryKey(key)
	if err != nil {
		return bad("the key is not a wake entry key", err)
	}
	f, err := readObject(data)
	if err != nil {
		return bad("not a JSON object", err)
	}
	var e Entry
	if raw, ok := f["migration_seed"]; ok {
		if u := f.unknown("format", "cell", "migration_seed"); u != "" {
			return bad(fmt.Sprintf("unknown member %q in a migration seed", u), nil)
		}
		if v, ok := jsonBool(raw); !ok || !v {
			return bad(`"migration_seed" must be true`, nil)
		}
		e.MigrationSeed = true
	} else if u := f.unknown("format", "cell", "due_ms", "identity"); u != "" {
		return bad(fmt.Sprintf("unknown member %q", u), nil)
	}
	if err := checkFormatMember(f); err != nil {
		return bad(err.Error(), nil)
	}
	raw, ok := f["cell"]
	if !ok {
		return bad(`"cell" is required`, nil)
	}
	if e.Cell, ok = jsonString(raw); !ok {
		return bad(`"cell" is not a string`, nil)
	}
	if !e.MigrationSeed {
		raw, ok := f["due_ms"]
		if !ok {
			return bad(`"due_ms" is required`, nil)
		}
		if e.DueMs, ok = jsonInt64(raw); !ok || e.DueMs < 0 {
			return bad(`"due_ms" is not a non-negative integer`, nil)
		}
		if raw, ok = f["identity"]; !ok {
			return bad(`"identity" is required`, nil)
		}
		s, ok := jsonString(raw)
		if !ok {
			return bad(`"identity" is not a string`, nil)
		}
		if e.Identity, err = ParseIdentity(s); err != nil {
			return bad(`bad "identity"`, err)
		}
	}
	switch {
	case e.Cell != ref.Cell:
		return bad(fmt.Sprintf("body names cell %q, key names %q", e.Cell, ref.Cell), nil)
	case e.MigrationSeed != ref.Seed:
		return bad("body and key disagree on being a migration seed", nil)
	case e.Identity != ref.Identity:
		return bad(fmt.Sprintf("body names identity %s, key names %s", e.Identity, ref.Identity), nil)
	case !e.MigrationSeed && Minute(e.DueMs) != ref.Minute:
		return bad(fmt.Sprintf("due_ms %d falls in minute %s, key names %s", e.DueMs, Minute(e.DueMs), ref.Minute), nil)
	}
	return e, nil
}

// checkFormatMember requires "format" to be the integer 2 (serde reads it
// as a u8, then celld compares it with 2).
func checkFormatMember(f jsonFields) error {
	raw, ok := f["format"]
	if !ok {
		return fmt.Errorf(`"format" is required`)
	}
	v, ok := jsonUint(raw, 8)
	if !ok {
		return fmt.Errorf(`"format" is not an integer 0-255`)
	}
	if v != Format {
		return fmt.Errorf(`"format" is %d, not %d`, v, Format)
	}
	return nil
}
