package layout

import (
	"strconv"
	"strings"
)

// LitestreamLTXPrefix is where a Litestream (v0.5) replica keeps its LTX
// files, relative to the replica's path: ltx/<level>/<min>-<max>.ltx, the
// level in decimal (a cell's log spells it as four hex digits).
const LitestreamLTXPrefix = "ltx/"

// ParseLitestreamKey parses "ltx/<level>/<min:016x>-<max:016x>.ltx", a key
// relative to a Litestream replica's path. ok is false for anything else
// (Litestream's readers skip such names too).
func ParseLitestreamKey(key string) (level int, min, max uint64, ok bool) {
	rest, found := strings.CutPrefix(key, LitestreamLTXPrefix)
	if !found {
		return 0, 0, 0, false
	}
	dir, name, found := strings.Cut(rest, "/")
	if !found || dir == "" || strings.Contains(name, "/") {
		return 0, 0, 0, false
	}
	lv, err := strconv.Atoi(dir)
	if err != nil || lv < 0 || lv > MaxLTXLevel || strconv.Itoa(lv) != dir {
		return 0, 0, 0, false
	}
	min, max, ok = ParseLTXFilename(name)
	return lv, min, max, ok
}
