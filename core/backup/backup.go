// Package backup is the backup durability mode: a durability.Log that saves
// the whole database image to the bucket when the cell changed since the
// last successful save — every Interval, and once more on an orderly Close.
//
// A backup acknowledges every commit at once. Its recovery point objective
// is therefore not zero, by design: a crash (Close with final false, as
// EvictAll models it) loses every commit made after the last successful
// save, and a failed save only logs and is retried at the next tick. Use the
// LTX log (core/ltxlog) when every acknowledged write must survive.
//
// The image saved is always one taken at commit time: the log copies the
// database into a spool (core/internal/imagespool: an unlinked temporary
// file past 1 MiB) page by page inside Append, at every commit without
// page capture, at the first commit with it, laying each later commit's
// pages over its copy. It never reads the database later, when a later
// turn may have a transaction open. A save streams the spool to the
// bucket, and a restore streams the backup into the database (or the
// restore's file), so no image is held in memory; a driver without
// driver.ImageWriter or driver.ImageRestorer is read or restored through
// one whole image.
//
// Keys (see docs/durability.md):
//
//	cells/<cell>/backup/e<epoch>/<seq:016x>.db
//
// where seq is the commit sequence number of the image inside the epoch.
// The newest backup is the one with the greatest (epoch, seq); each carries
// its SHA-256 in metadata, which Restore checks. After a save the log keeps
// the newest Keep backups of the cell and deletes the older ones.
package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
)

// Options configure a Log.
type Options struct {
	// Store is the bucket. Required.
	Store store.Store
	// Clock paces the saves; the real clock by default.
	Clock clock.Clock
	// Logger receives save failures; slog.Default() if nil.
	Logger *slog.Logger
	// Interval is how often a changed cell is saved (default one minute).
	Interval time.Duration
	// Keep is how many backups of a cell stay in the bucket (default 3,
	// at least 1). Older ones are deleted only after a newer save.
	Keep int
	// SaveTimeout bounds one periodic save (default 5 minutes), so a bucket
	// that stops answering delays the next save instead of stopping them.
	SaveTimeout time.Duration
	// SpoolDir is where the newest commit-time image waits for the next
	// save, in an unlinked temporary file once it is over 1 MiB (default:
	// the system's temporary directory).
	SpoolDir string

	// afterTick, set by tests, learns each periodic save's outcome.
	afterTick func(error)
}

// Log saves periodic backups. It implements durability.Log.
type Log struct {
	opts Options
}

var (
	_ durability.Log    = (*Log)(nil)
	_ durability.Prober = (*Log)(nil)
)

// Holds reports whether the bucket holds any object under the cell's
// backup prefix (one listing of at most one key).
func (l *Log) Holds(ctx context.Context, cell string) (bool, error) {
	return durability.HoldsAny(ctx, l.opts.Store, Prefix(cell))
}

// New returns a backup log writing to opts.Store.
func New(opts Options) (*Log, error) {
	if opts.Store == nil {
		return nil, errors.New("backup: Options.Store is required")
	}
	if opts.Interval < 0 || opts.Keep < 0 {
		return nil, errors.New("backup: Interval and Keep must not be negative")
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval == 0 {
		opts.Interval = time.Minute
	}
	if opts.Keep == 0 {
		opts.Keep = 3
	}
	if opts.SaveTimeout <= 0 {
		opts.SaveTimeout = 5 * time.Minute
	}
	return &Log{opts: opts}, nil
}

// Open starts the cell's backups for epoch. With restore, the newest backup
// replaces the database first (a bucket without one leaves it as it is —
// empty, since the runtime restores only an empty database).
// An epoch (other than lease.None's 0) that already has backups, or that a
// newer epoch's backups follow, is refused with *durability.EpochInUseError:
// another writer used it. Each backup of an epoch is written create-only.
// The database as opened counts as saved: only a later commit makes the
// cell due for a backup.
func (l *Log) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cellKey, epoch, conn := req.Cell, req.Epoch, req.Conn
	if epoch > 0 {
		infos, err := List(ctx, l.opts.Store, cellKey)
		if err != nil {
			return nil, fmt.Errorf("backup: list the backups of %s: %w", cellKey, err)
		}
		if len(infos) > 0 && infos[0].Epoch >= epoch {
			return nil, &durability.EpochInUseError{Cell: cellKey, Epoch: epoch, Key: infos[0].Key, Newest: infos[0].Epoch}
		}
	}
	if req.Restore {
		info, err := restoreInto(ctx, l.opts.Store, cellKey, conn)
		switch {
		case errors.Is(err, ErrNothingToRestore):
		case err != nil:
			return nil, fmt.Errorf("backup: restore %s: %w", cellKey, err)
		default:
			l.opts.Logger.Info("restored cell from backup", "cell", cellKey, "key", info.Key, "bytes", info.Size)
		}
	}
	// The image is read at the first commit (Append), not here: an
	// activation that never writes reads nothing and holds no copy.
	capture := req.PagesCaptured
	c := newCellLog(l.opts, cellKey, epoch, conn, capture)
	go c.run()
	return c, nil
}
