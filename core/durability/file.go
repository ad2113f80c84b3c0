package durability

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cellb/cellb/core/atomicfile"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/store"
)

// PointInTime lists the modes that restore to a TXID or time, in order.
func (ms Modes) PointInTime() Modes {
	var out Modes
	for _, m := range ms {
		if m.PointInTime {
			out = append(out, m)
		}
	}
	return out
}

// RestoreFile has the mode rebuild cell from the bucket, read-only,
// straight into a temporary file next to path (the LTX log lays pages at
// their offsets as it decodes them, so no image-sized buffer is needed),
// then makes that file path atomically (atomicfile.Write: a failure
// leaves path as it was). It returns what the restore was from and the
// file's size.
func (m Mode) RestoreFile(ctx context.Context, s store.Store, cell string, req RestoreRequest, path string) (Restored, int64, error) {
	var res Restored
	var n int64
	err := atomicfile.Write(path, 0o600, func(f *os.File) error {
		var err error
		if res, err = m.Restore(ctx, s, cell, req, f); err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			return err
		}
		n = st.Size()
		return nil
	})
	if err != nil {
		return Restored{}, 0, err
	}
	return res, n, nil
}

// ScratchNextTo returns a RestoreRequest.Scratch that opens an empty
// database with d (a mode that rebuilds through SQLite sessions needs a
// driver with them) in a directory it makes next to path on first use,
// and the cleanup that removes that directory.
func ScratchNextTo(path string, d driver.Driver) (func(ctx context.Context) (driver.Conn, error), func()) {
	var dir string
	open := func(ctx context.Context) (driver.Conn, error) {
		if dir == "" {
			made, err := os.MkdirTemp(filepath.Dir(path), ".cellb-restore-*")
			if err != nil {
				return nil, err
			}
			dir = made
		}
		return d.Open(ctx, driver.Config{Path: filepath.Join(dir, "cell.db")})
	}
	cleanup := func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	return open, cleanup
}

// SyncDatabaseFiles makes every commit SQLite has written to a database so
// far durable. It is the OpenRequest.SyncLocal the runtime hands a log for a
// local-primary cell, whose SQLite runs with synchronous=NORMAL.
//
// In WAL mode (the database has a -wal file) it syncs the log alone, as
// SQLite's synchronous=FULL does after each commit: a commit is durable once
// its frames are, and the database file changes only at checkpoints, which
// SQLite under NORMAL syncs itself (the log before the pages are copied, the
// database after). Without a log (rollback journal) it syncs the database
// file. The sync is fdatasync where there is one (on Linux, through any
// descriptor of a file, it flushes all of its dirty pages and its size).
func SyncDatabaseFiles(path string) error {
	return syncDatabaseFiles(path, datasync)
}

func syncDatabaseFiles(path string, sync func(*os.File) error) error {
	for _, name := range []string{path + "-wal", path} {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = sync(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return nil // the log, when there is one; else the database
	}
	return nil
}

// FileRestore says how Modes.RestoreToFile restores a cell into a file.
type FileRestore struct {
	// From names the mode to restore from; empty: the one mode whose log
	// the bucket holds for the cell (Detect).
	From string
	// Request picks the point in time and reports progress; its Scratch
	// is set from ScratchDriver.
	Request RestoreRequest
	// ScratchDriver opens the empty database a mode that rebuilds through
	// SQLite sessions needs (ScratchNextTo); it needs sessions.
	ScratchDriver driver.Driver
}

// RestoreToFile rebuilds cell from the bucket into the database file path
// (Mode.RestoreFile), read-only, with the mode r.From names or, without
// one, the mode Detect finds. It returns the mode, what the restore was
// from and the file's size. Its errors: *UnknownModeError for an unknown
// From; *NoLogError or *SeveralLogsError from Detect; *NoPointInTimeError
// when a TXID or time is asked of a mode that restores only its newest
// state (checked before anything is read or written); the restore's.
func (ms Modes) RestoreToFile(ctx context.Context, s store.Store, cell, path string, r FileRestore) (Mode, Restored, int64, error) {
	var m Mode
	var err error
	if r.From != "" {
		m, err = ms.Lookup(r.From)
	} else {
		m, err = ms.Detect(ctx, s, cell)
	}
	if err != nil {
		return m, Restored{}, 0, err
	}
	if !m.PointInTime && (r.Request.TXID != 0 || r.Request.Epoch != 0 || !r.Request.Time.IsZero()) {
		return m, Restored{}, 0, &NoPointInTimeError{Mode: m.Name}
	}
	req := r.Request
	if r.ScratchDriver != nil {
		scratch, cleanup := ScratchNextTo(path, r.ScratchDriver)
		defer cleanup()
		req.Scratch = scratch
	}
	res, n, err := m.RestoreFile(ctx, s, cell, req, path)
	return m, res, n, err
}
