package ltx

// SQLite's database header (page 1): the 16-byte header string, and the
// file-format write and read versions at offsets 18 and 19 (1 = rollback
// journal, 2 = WAL).
const (
	sqliteHeaderString = "SQLite format 3\x00"
	offWriteVersion    = 18
	offReadVersion     = 19
	formatWAL          = 2
	formatRollback     = 1
)

// WALHeaderPage returns a database's page 1 the way celld's LTX files carry
// it: with file-format bytes 18/19 = 2/2 (WAL mode), whatever journal mode
// the local database runs in. celld restores databases in WAL mode and
// reads the mode from these bytes (docs/durability.md, Format).
//
// data is never modified: when it is page 1 of a SQLite database in
// rollback-journal mode (either byte 1) a copy with both bytes set to 2 is
// returned; any other page, a page 1 already in WAL mode, and bytes that
// are not a SQLite header (or carry versions SQLite does not define) are
// returned as they are. Every encoder of LTX pages calls it on page 1, so
// the file checksum covers the bytes uploaded.
func WALHeaderPage(pgno uint32, data []byte) []byte {
	if pgno != 1 || len(data) < 100 || string(data[:len(sqliteHeaderString)]) != sqliteHeaderString {
		return data
	}
	w, r := data[offWriteVersion], data[offReadVersion]
	if w == formatWAL && r == formatWAL {
		return data
	}
	if (w != formatWAL && w != formatRollback) || (r != formatWAL && r != formatRollback) {
		return data
	}
	out := append([]byte(nil), data...)
	out[offWriteVersion], out[offReadVersion] = formatWAL, formatWAL
	return out
}
