package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// Log is where one durability mode keeps a cell's log:
// cells/<cell>/<dir>/, one directory e<epoch>/ per epoch below it.
type Log struct {
	// Name is the mode's name, as --durability and --from spell it.
	Name string
	// What names the log in messages: "LTX", "a changeset log", "backups".
	What string
	dir  string
}

// Prefix is the key prefix of the cell's log: "cells/<cell>/<dir>/".
func (l Log) Prefix(cell string) string { return CellPrefix(cell) + l.dir + "/" }

// EpochPrefix is one epoch's directory of the cell's log:
// "cells/<cell>/<dir>/e<epoch>/".
func (l Log) EpochPrefix(cell string, epoch uint64) string {
	return l.Prefix(cell) + EpochDir(epoch) + "/"
}

// LTX is the LTX log (celld's format): cells/<cell>/ltx/.
func LTX() Log { return Log{Name: "ltx", What: "LTX", dir: "ltx"} }

// Changeset is the changeset log: cells/<cell>/changeset/.
func Changeset() Log { return Log{Name: "changeset", What: "a changeset log", dir: "changeset"} }

// Backup is the backups: cells/<cell>/backup/.
func Backup() Log { return Log{Name: "backup", What: "backups", dir: "backup"} }

// Logs lists every log a bucket may hold for a cell, the LTX log first.
func Logs() []Log { return []Log{LTX(), Changeset(), Backup()} }

// EpochDir is an epoch's directory name, "e<decimal epoch>".
func EpochDir(epoch uint64) string { return "e" + strconv.FormatUint(epoch, 10) }

// ParseEpochDir parses "e<decimal epoch>" (a trailing '/' is allowed). A
// leading zero is refused, so that every epoch has one spelling.
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

// MaxLTXLevel is the highest compaction level a reader lists (9 is
// Litestream's snapshot level; celld writes 0 and 1).
const MaxLTXLevel = 9

// LTXLevelPrefix is one level of one epoch of the LTX log:
// "cells/<cell>/ltx/e<epoch>/<level:04x>/".
func LTXLevelPrefix(cell string, epoch uint64, level int) string {
	return fmt.Sprintf("%s%04x/", LTX().EpochPrefix(cell, epoch), level)
}

// LTXKey names one LTX file:
// "cells/<cell>/ltx/e<epoch>/<level:04x>/<min:016x>-<max:016x>.ltx".
func LTXKey(cell string, epoch uint64, level int, min, max uint64) string {
	return LTXLevelPrefix(cell, epoch, level) + LTXFilename(min, max)
}

// LTXFilename is "<min:016x>-<max:016x>.ltx".
func LTXFilename(min, max uint64) string { return fmt.Sprintf("%016x-%016x.ltx", min, max) }

// LTXFile is what an LTX file's key says.
type LTXFile struct {
	Cell    string
	Epoch   uint64
	Level   int
	MinTXID uint64
	MaxTXID uint64
}

// ParseLTXKey parses "cells/<cell>/ltx/e<epoch>/<level>/<min>-<max>.ltx".
// ok is false for keys that are not LTX files of a cell (readers ignore
// those, as celld ignores non-.ltx names in a level).
func ParseLTXKey(key string) (f LTXFile, ok bool) {
	rest, found := strings.CutPrefix(key, CellsPrefix)
	if !found {
		return LTXFile{}, false
	}
	parts := strings.Split(rest, "/")
	// <cell> ltx e<epoch> <level> <file>
	if len(parts) != 5 || parts[1] != LTX().dir || parts[0] == "" {
		return LTXFile{}, false
	}
	epoch, ok := ParseEpochDir(parts[2])
	if !ok {
		return LTXFile{}, false
	}
	if len(parts[3]) != 4 {
		return LTXFile{}, false
	}
	level, err := strconv.ParseUint(parts[3], 16, 16)
	if err != nil || level > MaxLTXLevel {
		return LTXFile{}, false
	}
	min, max, ok := ParseLTXFilename(parts[4])
	if !ok {
		return LTXFile{}, false
	}
	return LTXFile{Cell: parts[0], Epoch: epoch, Level: int(level), MinTXID: min, MaxTXID: max}, true
}

// ParseLTXFilename parses "<min:016x>-<max:016x>.ltx".
func ParseLTXFilename(name string) (min, max uint64, ok bool) {
	base, found := strings.CutSuffix(name, ".ltx")
	if !found || len(base) != 33 || base[16] != '-' {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(base[:16], 16, 64)
	b, err2 := strconv.ParseUint(base[17:], 16, 64)
	if err1 != nil || err2 != nil || a == 0 || a > b {
		return 0, 0, false
	}
	return a, b, true
}

// The changeset log's file kinds: snapshot files (".snap") and changesets
// (".cset").
const (
	ChangesetSnapshotSuffix = ".snap"
	ChangesetSuffix         = ".cset"
)

// ChangesetKey names a file of the changeset log:
// "cells/<cell>/changeset/e<epoch>/<min:016x>-<max:016x>.<kind>", kind
// "snap" for snapshot files and "cset" for the others.
func ChangesetKey(cell string, epoch, minSeq, maxSeq uint64, snapshot bool) string {
	suffix := ChangesetSuffix
	if snapshot {
		suffix = ChangesetSnapshotSuffix
	}
	return fmt.Sprintf("%s%016x-%016x%s", Changeset().EpochPrefix(cell, epoch), minSeq, maxSeq, suffix)
}

// ChangesetFile is what a changeset log file's key says.
type ChangesetFile struct {
	MinSeq   uint64
	MaxSeq   uint64
	Snapshot bool
}

// ParseChangesetKey reads a key inside Changeset().EpochPrefix(cell,
// epoch). ok is false for any other key, and for names that are not the
// one spelling ChangesetKey gives.
func ParseChangesetKey(cell string, epoch uint64, key string) (f ChangesetFile, ok bool) {
	name, ok := strings.CutPrefix(key, Changeset().EpochPrefix(cell, epoch))
	if !ok {
		return ChangesetFile{}, false
	}
	switch {
	case strings.HasSuffix(name, ChangesetSnapshotSuffix):
		f.Snapshot = true
		name = strings.TrimSuffix(name, ChangesetSnapshotSuffix)
	case strings.HasSuffix(name, ChangesetSuffix):
		name = strings.TrimSuffix(name, ChangesetSuffix)
	default:
		return ChangesetFile{}, false
	}
	lo, hi, ok := strings.Cut(name, "-")
	if !ok || len(lo) != 16 || len(hi) != 16 {
		return ChangesetFile{}, false
	}
	var err1, err2 error
	f.MinSeq, err1 = strconv.ParseUint(lo, 16, 64)
	f.MaxSeq, err2 = strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || f.MinSeq == 0 || f.MaxSeq < f.MinSeq ||
		ChangesetKey(cell, epoch, f.MinSeq, f.MaxSeq, f.Snapshot) != key {
		return ChangesetFile{}, false
	}
	return f, true
}

// BackupKey names the backup of commit seq of epoch:
// "cells/<cell>/backup/e<epoch>/<seq:016x>.db".
func BackupKey(cell string, epoch, seq uint64) string {
	return fmt.Sprintf("%s%016x.db", Backup().EpochPrefix(cell, epoch), seq)
}

// BackupFile is what a backup's key says.
type BackupFile struct {
	Epoch uint64
	Seq   uint64
}

// ParseBackupKey reads a key below Backup().Prefix(cell). ok is false for
// any other key, and for names that are not the one spelling BackupKey
// gives.
func ParseBackupKey(cell, key string) (BackupFile, bool) {
	rest, ok := strings.CutPrefix(key, Backup().Prefix(cell))
	if !ok {
		return BackupFile{}, false
	}
	dir, name, ok := strings.Cut(rest, "/")
	if !ok || len(dir) < 2 || dir[0] != 'e' {
		return BackupFile{}, false
	}
	epoch, err := strconv.ParseUint(dir[1:], 10, 64)
	if err != nil || strconv.FormatUint(epoch, 10) != dir[1:] {
		return BackupFile{}, false
	}
	hexSeq, ok := strings.CutSuffix(name, ".db")
	if !ok || len(hexSeq) != 16 {
		return BackupFile{}, false
	}
	seq, err := strconv.ParseUint(hexSeq, 16, 64)
	if err != nil || hexSeq != fmt.Sprintf("%016x", seq) {
		return BackupFile{}, false
	}
	return BackupFile{Epoch: epoch, Seq: seq}, true
}

// EpochOfKey is the epoch of an object of the cell's log: the e<epoch>
// directory right below l.Prefix(cell). ok is false for keys outside the
// log or not inside an epoch directory.
func (l Log) EpochOfKey(cell, key string) (epoch uint64, ok bool) {
	rest, ok := strings.CutPrefix(key, l.Prefix(cell))
	if !ok {
		return 0, false
	}
	dir, _, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, false
	}
	return ParseEpochDir(dir)
}
