package wake

import (
	"strings"

	"github.com/cellb/cellb/core/layout"
)

// seedMinute and seedLeaf name a migration seed. The seed's own leaf cannot
// collide with a writer's identity, and its 1970 minute is due at once.
const (
	seedMinute = "1970-01-01T00:00"
	seedLeaf   = "migration"
)

// EntryKey is the immutable key of one alarm installation:
// wake/entries/<Minute(dueMs)>/<cell>/<id>. cell must be a valid cell key.
func EntryKey(cell string, dueMs int64, id Identity) string {
	return layout.WakeEntryKey(Minute(dueMs), cell, id.String())
}

// MigrationSeedKey is the discovery seed celld's offline migration writes
// for every cell: wake/entries/1970-01-01T00:00/<cell>/migration. It is an
// inventory hint, never an installation; its identity is (0,0).
func MigrationSeedKey(cell string) string {
	return layout.WakeEntryKey(seedMinute, cell, seedLeaf)
}

// EntryRef is what a listed entry key says.
type EntryRef struct {
	// Minute is the key's bucket, "YYYY-MM-DDTHH:MM"; MinuteMs its first
	// millisecond. The entry is due once MinuteMs <= now.
	Minute   string
	MinuteMs int64
	Cell     string
	// Identity is (0,0) for a migration seed.
	Identity Identity
	// Seed marks the migration leaf.
	Seed bool
}

// Key renders the ref back to its key.
func (r EntryRef) Key() string {
	if r.Seed {
		return MigrationSeedKey(r.Cell)
	}
	return layout.WakeEntryKey(r.Minute, r.Cell, r.Identity.String())
}

// ParseEntryKey classifies a listed key under wake/entries/. It rejects
// exactly what celld rejects: another prefix, other than three segments, a
// minute that is not canonical, an identity that is not canonical or has
// epoch 0, the migration leaf outside 1970-01-01T00:00, and a cell key
// outside celld's fence. A rejected key must never be deleted or woken.
func ParseEntryKey(key string) (EntryRef, error) {
	rest, ok := strings.CutPrefix(key, layout.WakeEntriesPrefix)
	if !ok {
		return EntryRef{}, &KeyError{Key: key, Reason: "not under " + layout.WakeEntriesPrefix}
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return EntryRef{}, &KeyError{Key: key, Reason: "not <minute>/<cell>/<identity>"}
	}
	minute, cell, leaf := parts[0], parts[1], parts[2]
	ref := EntryRef{Minute: minute, Cell: cell}
	if leaf == seedLeaf && minute == seedMinute {
		ref.Seed = true
	} else {
		id, err := ParseIdentity(leaf)
		if err != nil {
			return EntryRef{}, &KeyError{Key: key, Reason: "bad identity", Err: err}
		}
		ref.Identity = id
	}
	if p := cellKeyProblem(cell); p != "" {
		return EntryRef{}, &KeyError{Key: key, Reason: p}
	}
	ms, ok := parseMinute(minute)
	if !ok {
		return EntryRef{}, &KeyError{Key: key, Reason: "minute is not a canonical YYYY-MM-DDTHH:MM"}
	}
	ref.MinuteMs = ms
	return ref, nil
}
