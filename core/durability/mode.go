package durability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// Mode is one durability mode as a value: its name and where it keeps a
// cell's log in the bucket (layout.Log: Name, What, Prefix), how to open
// its Log on a bucket, and how to rebuild a cell from what it keeps.
// Each log package returns its own (ltxlog.Mode, changeset.Mode,
// backup.Mode); a program assembles the ones it offers into Modes.
type Mode struct {
	layout.Log
	// PointInTime says Restore takes RestoreRequest.TXID and Time; a mode
	// without it restores only its newest state.
	PointInTime bool
	// NeedsSessions says the mode's log needs a connection with SQLite
	// sessions (driver.Sessioner) to open.
	NeedsSessions bool
	// SyncsLocal says the mode's log honours OpenRequest.SyncLocal: it
	// syncs a local-primary cell's file once per group commit before it
	// acknowledges the group, so SQLite need not sync each commit.
	SyncsLocal bool
	// AcksFromBucket says the mode's log acknowledges a commit only once
	// it is stored in the bucket (durability.BucketAcker): a single host
	// then leaves the local file unsynced per commit and, after a machine
	// restart, rebuilds a cell whose file may lack acknowledged commits
	// from the bucket (docs/durability.md).
	AcksFromBucket bool
	// Open opens the mode's Log on a bucket.
	Open func(OpenOptions) (Log, error)
	// Restore rebuilds the cell's database from the bucket, read-only, and
	// writes its image to out.
	Restore func(ctx context.Context, s store.Store, cell string, req RestoreRequest, out RestoreSink) (Restored, error)
}

// OpenOptions are what every mode's log is opened with; zero fields take
// the log's defaults.
type OpenOptions struct {
	Store  store.Store
	Clock  clock.Clock
	Logger *slog.Logger
	// Retention is how long a log with point-in-time history keeps every
	// state it made durable restorable (zero: the log's default;
	// negative: none). Other logs ignore it.
	Retention time.Duration
}

// RestoreRequest says what to restore.
type RestoreRequest struct {
	// TXID and Time pick a point in time (zero: the newest state); only a
	// mode with PointInTime takes them, the others refuse them.
	TXID uint64
	Time time.Time
	// Epoch, with TXID, restores a bookmark's state (Bookmark): TXID of
	// that epoch's chain rather than of the newest (0: the newest).
	Epoch uint64
	// Progress, if set, is called with the bytes read so far and the bytes
	// the restore will read, when the mode knows them.
	Progress func(done, total int64)
	// Scratch opens an empty database a mode may rebuild the cell in (the
	// changeset log applies its changesets through SQLite sessions); the
	// mode closes it. Modes that need none ignore it.
	Scratch func(ctx context.Context) (driver.Conn, error)
}

// RestoreSink receives a restored image: *os.File is one.
type RestoreSink interface {
	io.WriterAt
	Truncate(size int64) error
}

// Restored says what a restore rebuilt the cell from, in words, such as
// "the LTX log at TXID 6 (epoch 2, 3 files)" or "backup <key>".
type Restored struct {
	From string
}

// Modes is the set of durability modes a program offers, in the order it
// lists them. It is a value the program assembles, for example
// durability.Modes{ltxlog.Mode(), changeset.Mode(), backup.Mode()}.
type Modes []Mode

// Names lists the modes' names in order.
func (ms Modes) Names() []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

// Lookup returns the mode called name, or *UnknownModeError.
func (ms Modes) Lookup(name string) (Mode, error) {
	for _, m := range ms {
		if m.Name == name {
			return m, nil
		}
	}
	return Mode{}, &UnknownModeError{Name: name, Known: ms.Names()}
}

// Detect returns the one mode whose log the bucket holds for cell. It
// fails with *NoLogError when none holds anything for it and with
// *SeveralLogsError when more than one does.
func (ms Modes) Detect(ctx context.Context, s store.Store, cell string) (Mode, error) {
	var found Modes
	for _, m := range ms {
		page, err := s.List(ctx, store.ListOptions{Prefix: m.Prefix(cell), Limit: 1})
		if err != nil {
			return Mode{}, err
		}
		if len(page.Objects) > 0 {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 0:
		return Mode{}, &NoLogError{Cell: cell, Known: ms.Names()}
	case 1:
		return found[0], nil
	}
	return Mode{}, &SeveralLogsError{Cell: cell, Found: found.Names()}
}

// UnknownModeError: no mode of the set has the name.
type UnknownModeError struct {
	Name  string
	Known []string
}

func (e *UnknownModeError) Error() string {
	return fmt.Sprintf("unknown durability mode %q (want %s)", e.Name, orList(e.Known))
}

// NoLogError: the bucket holds no log of any mode for the cell.
type NoLogError struct {
	Cell  string
	Known []string
}

func (e *NoLogError) Error() string {
	return fmt.Sprintf("the bucket holds no %s files for this cell (under %s)", orList(e.Known), layout.CellPrefix(e.Cell))
}

// SeveralLogsError: the bucket holds the logs of several modes for the
// cell, so which to use must be named.
type SeveralLogsError struct {
	Cell  string
	Found []string
}

func (e *SeveralLogsError) Error() string {
	return fmt.Sprintf("the bucket holds several logs for this cell (%s): name one", strings.Join(e.Found, ", "))
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return "(no modes)"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// NoPointInTimeError: a TXID or time was asked of a mode that restores
// only its newest state.
type NoPointInTimeError struct {
	Mode string
}

func (e *NoPointInTimeError) Error() string {
	return fmt.Sprintf("the %s log restores only its newest state: a TXID or time needs a log with point-in-time restore", e.Mode)
}

// WriteImage writes a whole image to out, replacing what it held.
func WriteImage(out RestoreSink, image []byte) error {
	if err := out.Truncate(0); err != nil {
		return err
	}
	_, err := out.WriteAt(image, 0)
	return err
}

// CopyImage writes conn's image to out, replacing what it held: page by
// page when the driver streams its image (driver.ImageWriter), else
// through one Serialize.
func CopyImage(ctx context.Context, conn driver.Conn, out RestoreSink) error {
	if iw, ok := conn.(driver.ImageWriter); ok {
		if err := out.Truncate(0); err != nil {
			return err
		}
		n, err := iw.WriteImage(ctx, &offsetWriter{w: out})
		if !errors.Is(err, driver.ErrUnsupported) || n != 0 {
			return err
		}
	}
	img, err := conn.Serialize(ctx)
	if err != nil {
		return err
	}
	return WriteImage(out, img)
}

// offsetWriter writes a stream into an io.WriterAt from offset 0.
type offsetWriter struct {
	w   io.WriterAt
	off int64
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	n, err := o.w.WriteAt(p, o.off)
	o.off += int64(n)
	return n, err
}
