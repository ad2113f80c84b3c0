package ltx

import (
	"time"

	"github.com/cellb/cellb/core/layout"
)

// MaxLevel is the highest compaction level a reader lists (9 is
// Litestream's snapshot level; celld writes 0 and 1).
const MaxLevel = layout.MaxLTXLevel

// MetadataTimestamp is the object metadata name celld and Litestream put on
// every LTX object (Azure spells it litestream_timestamp; the Azure adapter
// maps '-' to '_').
const MetadataTimestamp = "litestream-timestamp"

// The LTX log's keys are spelled by core/layout (layout.LTXKey and its
// prefixes); the functions below give them the format's types.

// CellPrefix is where a cell's log lives: "cells/<cell>/ltx/".
func CellPrefix(cell string) string { return layout.LTX().Prefix(cell) }

// EpochPrefix is one epoch's generation: "cells/<cell>/ltx/e<epoch>/".
func EpochPrefix(cell string, epoch uint64) string { return layout.LTX().EpochPrefix(cell, epoch) }

// LevelPrefix is one level of one epoch.
func LevelPrefix(cell string, epoch uint64, level int) string {
	return layout.LTXLevelPrefix(cell, epoch, level)
}

// Key names one LTX file.
func Key(cell string, epoch uint64, level int, min, max TXID) string {
	return layout.LTXKey(cell, epoch, level, uint64(min), uint64(max))
}

// Filename is "<min:016x>-<max:016x>.ltx".
func Filename(min, max TXID) string { return layout.LTXFilename(uint64(min), uint64(max)) }

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
	// InBundle: the file is a row of a node-log bundle (core/nodelog):
	// Key is the bundle's key and the file is its Size bytes at Offset.
	InBundle bool
	Offset   int64
}

// ParseKey parses "cells/<cell>/ltx/e<epoch>/<level>/<min>-<max>.ltx". ok is
// false for keys that are not LTX files of a cell (readers ignore those, as
// celld ignores non-.ltx names in a level).
func ParseKey(key string) (info FileInfo, ok bool) {
	f, ok := layout.ParseLTXKey(key)
	if !ok {
		return FileInfo{}, false
	}
	return FileInfo{Key: key, Cell: f.Cell, Epoch: f.Epoch, Level: f.Level, MinTXID: TXID(f.MinTXID), MaxTXID: TXID(f.MaxTXID)}, true
}

// ParseEpochDir parses "e<decimal epoch>" (a trailing '/' is allowed).
func ParseEpochDir(s string) (uint64, bool) { return layout.ParseEpochDir(s) }

// ParseFilename parses "<min:016x>-<max:016x>.ltx".
func ParseFilename(name string) (min, max TXID, ok bool) {
	a, b, ok := layout.ParseLTXFilename(name)
	return TXID(a), TXID(b), ok
}

// FormatTimestamp renders a header timestamp as celld's metadata value:
// RFC 3339 in UTC with trailing fractional zeros trimmed
// ("2026-05-30T02:46:41.091Z").
func FormatTimestamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
