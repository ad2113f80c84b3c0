// Package ltx reads and writes the LTX files of a cell's log, byte-compatible
// with celld and Litestream (LTX version 3), and plans restores from them.
//
// The codec itself is github.com/superfly/ltx, the maintained Go
// implementation that celld's own codec was ported from; this package wraps
// it behind small CellB types and adds the checks a restore needs that the
// codec leaves to callers (page order, pages within the commit, complete
// snapshots), so a corrupt or truncated file gives a typed *CorruptError,
// never a panic and never a silently wrong image.
//
// Layout of a cell's log in a bucket:
//
//	cells/<cell>/ltx/e<epoch>/<level:04x>/<min:016x>-<max:016x>.ltx
//
// where epoch is decimal and level 0 holds one file per upload.
package ltx
