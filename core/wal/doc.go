// Package wal reads SQLite write-ahead log (WAL) files.
//
// A WAL file is a 32-byte header followed by frames; each frame is a 24-byte
// frame header and one database page. A frame whose "database size" field
// is non-zero ends a transaction (a commit frame). Every frame carries the
// header's two salts and a checksum that runs cumulatively from the header
// through every earlier frame, so a reader knows where the valid log ends:
// at the first frame whose salts or checksum do not match. When SQLite
// restarts the log after a checkpoint it writes a new header with new salts
// and overwrites frames from the start; frames of the previous generation
// that lie beyond the new end keep their old salts and are thereby ignored.
//
// CellB's WAL-mode drivers use ReadCommits to capture the pages each commit
// wrote: after a commit they read the frames appended since the last commit
// they saw, and get every complete transaction as the final version of each
// page it wrote plus the database size after it.
package wal
