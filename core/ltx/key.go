package ltx

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cellb/cellb/core/logkeys"
)

// MaxLevel is the highest compaction level a reader lists (9 is
// Litestream's snapshot level; celld writes 0 and 1).
const MaxLevel = 9

// MetadataTimestamp is the object metadata name celld and Litestream put on
// every LTX object (Azure spells it litestream_timestamp; the Azure adapter
// maps '-' to '_').
const MetadataTimestamp = "litestream-timestamp"

// CellPrefix is where a cell's log lives: "cells/<cell>/ltx/".
func CellPrefix(cell string) string { return logkeys.LTX().Prefix(cell) }

// EpochPrefix is one epoch's generation: "cells/<cell>/ltx/e<epoch>/".
func EpochPrefix(cell string, epoch uint64) string {
	return CellPrefix(cell) + "e" + strconv.FormatUint(epoch, 10) + "/"
}

// LevelPrefix is one level of one epoch.
func LevelPrefix(cell string, epoch uint64, level int) string {
	return fmt.Sprintf("%s%04x/", EpochPrefix(cell, epoch), level)
}

// Key names one LTX file.
func Key(cell string, epoch uint64, level int, min, max TXID) string {
	return LevelPrefix(cell, epoch, level) + Filename(min, max)
}

// Filename is "<min:016x>-<max:016x>.ltx".
func Filename(min, max TXID) string { return fmt.Sprintf("%016x-%016x.ltx", uint64(min), uint64(max)) }

// FileInfo locates one LTX file of a cell's log.
type FileInfo struct {
	Key      string
	Cell     string
	Epoch    uint64
	Level    int
	MinTXID  TXID
	MaxTXID  TXID
	Size     int64
	Modified time.Time
}

// ParseKey parses "cells/<cell>/ltx/e<epoch>/<level>/<min>-<max>.ltx". ok is
// false for keys that are not LTX files of a cell (readers ignore those, as
// celld ignores non-.ltx names in a level).
func ParseKey(key string) (info FileInfo, ok bool) {
	rest, found := strings.CutPrefix(key, "cells/")
	if !found {
		return FileInfo{}, false
	}
	parts := strings.Split(rest, "/")
	// <cell> ltx e<epoch> <level> <file>
	if len(parts) != 5 || parts[1] != "ltx" || parts[0] == "" {
		return FileInfo{}, false
	}
	epoch, ok := ParseEpochDir(parts[2])
	if !ok {
		return FileInfo{}, false
	}
	if len(parts[3]) != 4 {
		return FileInfo{}, false
	}
	level, err := strconv.ParseUint(parts[3], 16, 16)
	if err != nil || level > MaxLevel {
		return FileInfo{}, false
	}
	min, max, ok := ParseFilename(parts[4])
	if !ok {
		return FileInfo{}, false
	}
	return FileInfo{Key: key, Cell: parts[0], Epoch: epoch, Level: int(level), MinTXID: min, MaxTXID: max}, true
}

// ParseEpochDir parses "e<decimal epoch>" (a trailing '/' is allowed).
func ParseEpochDir(s string) (uint64, bool) {
	s = strings.TrimSuffix(s, "/")
	d, found := strings.CutPrefix(s, "e")
	if !found || d == "" || (len(d) > 1 && d[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(d, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// ParseFilename parses "<min:016x>-<max:016x>.ltx".
func ParseFilename(name string) (min, max TXID, ok bool) {
	base, found := strings.CutSuffix(name, ".ltx")
	if !found || len(base) != 33 || base[16] != '-' {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(base[:16], 16, 64)
	b, err2 := strconv.ParseUint(base[17:], 16, 64)
	if err1 != nil || err2 != nil || a == 0 || a > b {
		return 0, 0, false
	}
	return TXID(a), TXID(b), true
}

// FormatTimestamp renders a header timestamp as celld's metadata value:
// RFC 3339 in UTC with trailing fractional zeros trimmed
// ("2026-05-30T02:46:41.091Z").
func FormatTimestamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
