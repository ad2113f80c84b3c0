package wake

import (
	"fmt"

	"github.com/cellb/cellb/core/layout"
)

// FormatRecord is wake/format.json. Migrating is set while a starter seeds
// the index; the marker is created that way (create-only) and then swapped
// to the final record.
type FormatRecord struct {
	Format    int
	Migrating bool
}

// Encode writes the marker as celld serializes it: migrating is omitted
// when false.
//
//	{"format":2}
//	{"format":2,"migrating":true}
func (r FormatRecord) Encode() []byte {
	b := fmt.Appendf(nil, `{"format":%d`, r.Format)
	if r.Migrating {
		b = append(b, `,"migrating":true`...)
	}
	return append(b, '}')
}

// DecodeFormat reads the marker strictly (deny_unknown_fields): format is
// a required integer 0–255 and migrating an optional boolean. A format
// other than 2 decodes, so that CheckFormat can say which format blocks
// startup; celld refuses it at the same point.
func DecodeFormat(data []byte) (FormatRecord, error) {
	bad := func(reason string, err error) (FormatRecord, error) {
		return FormatRecord{}, &layout.RecordError{Key: layout.WakeFormatKey, Reason: reason, Err: err}
	}
	f, err := readObject(data)
	if err != nil {
		return bad("not a JSON object", err)
	}
	if u := f.unknown("format", "migrating"); u != "" {
		return bad(fmt.Sprintf("unknown member %q", u), nil)
	}
	raw, ok := f["format"]
	if !ok {
		return bad(`"format" is required`, nil)
	}
	v, ok := jsonUint(raw, 8)
	if !ok {
		return bad(`"format" is not an integer 0-255`, nil)
	}
	r := FormatRecord{Format: int(v)}
	if raw, ok := f["migrating"]; ok {
		if r.Migrating, ok = jsonBool(raw); !ok {
			return bad(`"migrating" is not a boolean`, nil)
		}
	}
	return r, nil
}

// FormatAction is what startup does about the wake index.
type FormatAction int

const (
	// FormatReady: the marker says format 2; serve.
	FormatReady FormatAction = iota + 1
	// FormatInitialize: no marker and no wake data. Run celld's
	// initialization: check every node lease has expired, create
	// {"format":2,"migrating":true} create-only, PUT one migration seed per
	// cells/<cell>/ prefix, check the leases again, then swap the marker to
	// {"format":2}. Losing the create race means another starter is doing
	// it: read the marker again.
	FormatInitialize
	// FormatResume: a starter stopped mid-migration (the marker says
	// migrating). Any starter finishes it as for FormatInitialize, minus the
	// create; repeating seeds is harmless, because any retirement
	// certificate makes a seed obsolete.
	FormatResume
)

func (a FormatAction) String() string {
	switch a {
	case FormatReady:
		return "ready"
	case FormatInitialize:
		return "initialize"
	case FormatResume:
		return "resume"
	}
	return "?"
}

// CheckFormat decides startup from the marker (nil when
// layout.WakeFormatKey is absent) and, when it is absent, from legacyFound:
// layout.WakeLegacyFormatKey if that key exists, and each of
// layout.WakeUnmarkedDataPrefixes holding at least one object.
// It returns a *FormatBlockedError when startup must stop. A concurrent
// starter can publish its marker and seeds while this one scans, so read
// the marker again before acting on BlockUnmarkedData, as celld does.
func CheckFormat(rec *FormatRecord, legacyFound []string) (FormatAction, error) {
	switch {
	case rec == nil && len(legacyFound) > 0:
		return 0, &FormatBlockedError{Block: BlockUnmarkedData, Found: append([]string(nil), legacyFound...)}
	case rec == nil:
		return FormatInitialize, nil
	case rec.Format != Format:
		return 0, &FormatBlockedError{Block: BlockOtherFormat, Format: rec.Format}
	case rec.Migrating:
		return FormatResume, nil
	}
	return FormatReady, nil
}
