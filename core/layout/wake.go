package layout

import "strings"

// WakeFormatKey is the wake index's format marker, wake/format.json.
const WakeFormatKey = "wake/format.json"

// WakeLegacyFormatKey is an experimental marker of pre-release builds; its
// presence blocks startup.
const WakeLegacyFormatKey = "wake-format.json"

// WakerKey is the fleet's single waker-role lease, wake/waker.json.
const WakerKey = "wake/waker.json"

// WakeEntriesPrefix is where alarm publications live:
// wake/entries/<minute>/<cell>/<leaf>.
const WakeEntriesPrefix = "wake/entries/"

// WakeMinutePrefix is one minute's publications: "wake/entries/<minute>/".
func WakeMinutePrefix(minute string) string { return WakeEntriesPrefix + minute + "/" }

// WakeEntryKey is one publication's key:
// "wake/entries/<minute>/<cell>/<leaf>", the leaf being the installation's
// identity or, for celld's migration seed, "migration".
func WakeEntryKey(minute, cell, leaf string) string {
	return WakeMinutePrefix(minute) + cell + "/" + leaf
}

// WakeRetiredPrefix is where retirement certificates live.
const WakeRetiredPrefix = "wake/retired/"

// WakeRetiredKey is a cell's retirement certificate:
// "wake/retired/<cell>.json".
func WakeRetiredKey(cell string) string { return WakeRetiredPrefix + cell + ".json" }

// WakeUnmarkedDataPrefixes are the prefixes that must be empty when
// WakeFormatKey is missing: experimental layouts, and format-2 data
// written without a marker. The legacy v0.3 layout (wake/<minute>/<cell>)
// is not among them: it is what initialization imports from. A fresh
// slice is returned each call.
func WakeUnmarkedDataPrefixes() []string {
	return []string{"wake-v2/", "wake-retired-v2/", WakeEntriesPrefix, WakeRetiredPrefix}
}

// CellOfWakeRetiredKey is the cell a key under WakeRetiredPrefix names:
// the key less the prefix and its ".json" suffix. ok is false for other
// keys.
func CellOfWakeRetiredKey(key string) (cell string, ok bool) {
	rest, ok := strings.CutPrefix(key, WakeRetiredPrefix)
	if !ok {
		return "", false
	}
	cell, ok = strings.CutSuffix(rest, ".json")
	if !ok || cell == "" || strings.Contains(cell, "/") {
		return "", false
	}
	return cell, true
}
