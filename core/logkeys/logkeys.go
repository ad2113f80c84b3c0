// Package logkeys names the durability modes that keep a cell's log in the
// bucket, and where each keeps it: cells/<cell>/<dir>/, one directory
// e<epoch>/ per epoch below it. It holds names and key prefixes only, so
// every package that needs them — the log formats, the logs, the fleet's
// lost-record check, the CLI — agrees on them without importing the logs.
package logkeys

// Log is where one durability mode keeps a cell's log.
type Log struct {
	// Name is the mode's name, as --durability and --from spell it.
	Name string
	// What names the log in messages: "LTX", "a changeset log", "backups".
	What string
	dir  string
}

// Prefix is the key prefix of the cell's log: "cells/<cell>/<dir>/".
func (l Log) Prefix(cell string) string { return "cells/" + cell + "/" + l.dir + "/" }

// LTX is the LTX log (celld's format): cells/<cell>/ltx/.
func LTX() Log { return Log{Name: "ltx", What: "LTX", dir: "ltx"} }

// Changeset is the changeset log: cells/<cell>/changeset/.
func Changeset() Log { return Log{Name: "changeset", What: "a changeset log", dir: "changeset"} }

// Backup is the backups: cells/<cell>/backup/.
func Backup() Log { return Log{Name: "backup", What: "backups", dir: "backup"} }

// All lists every log a bucket may hold for a cell, the LTX log first.
func All() []Log { return []Log{LTX(), Changeset(), Backup()} }
