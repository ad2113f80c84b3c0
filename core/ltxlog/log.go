// Package ltxlog is the LTX log: a durability.Log that uploads every commit
// of a cell to a bucket in celld's format, so CellB and celld nodes can
// restore and continue each other's cells.
//
// Per cell and epoch the log writes level-0 files
// cells/<cell>/ltx/e<epoch>/0000/<min>-<max>.ltx. The first commit of an
// epoch is a snapshot (every page, TXID 1); later commits carry only the
// pages they changed. Uploads go strictly in order, one at a time; commits
// that arrive while an upload is in flight are merged (newest page wins)
// into the next file, which then spans their TXID range — group commit, so
// one upload acknowledges many turns. A commit is durable when the upload
// holding it has succeeded; a failed upload fails that commit and every
// later one, which breaks the cell.
//
// Compaction keeps restores proportional to the cell's size at a cost
// proportional to what changed: after enough level-0 files the log merges
// that run into one level-1 range file (celld's L1 layout), and merges the
// whole chain into one level-1 file from TXID 1 only once the range files
// add up to the full file's size (Options.FullMergePercent); it deletes
// what a new file covers only after that file is stored, so the bucket
// always holds a complete chain. It runs on a goroutine of its own, beside
// the uploads: no acknowledgement waits for it. See compact.go. With a
// retention window (Options.Retention, the default) it keeps every file
// end of the window restorable instead, and deletes what ages out:
// retain.go.
package ltxlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/nodelog"
	"github.com/cellb/cellb/core/store"
)

// Options configure a Log.
type Options struct {
	// Store is the bucket. Required.
	Store store.Store
	// Clock stamps headers and paces retries; the real clock by default.
	Clock clock.Clock
	// Logger receives upload failures and compactions; slog.Default() if nil.
	Logger *slog.Logger
	// Retention is how long every state the log made durable as a file
	// (each level-0 file's end: an upload's, with a node log a tiering's;
	// every bookmark CurrentBookmark or BookmarkForTime gives, which with
	// a node log is tiered as a file end first) stays restorable exactly,
	// each from at most 20 objects (default 30 days; negative: none,
	// compaction deletes what it merges as soon as the merge is stored). Compaction then follows
	// the ladder of retain.go, and the log deletes what ages out itself,
	// older epochs included. Ages are read on Clock.
	Retention time.Duration
	// CompactAfter is how many level-0 files an epoch collects before the
	// log merges its chain into level 1 (default 64, or 2 with a
	// retention window, whose ladder merges at every second file anyway;
	// negative disables).
	CompactAfter int
	// FullMergePercent is when a compaction rewrites the whole chain as
	// one file from TXID 1 instead of merging only the level-0 run: once
	// the level-1 range files after the chain's full file, with the run,
	// add up to this percentage of the full file's size (default 100: a
	// restore reads at most about twice the database plus the level-0
	// tail; negative: every compaction is a full merge, as before range
	// files).
	FullMergePercent int
	// RangeFanout is how many level-1 range files of about the same weight
	// gather before the next range merge takes them in (default 8;
	// negative: never, they wait for the full merge), so a chain holds a
	// number of range files logarithmic in its commits.
	RangeFanout int
	// UploadRetries is how often a failed level-0 upload is retried before
	// the cell breaks (default 3). Level-0 writes are plain PUTs of the same
	// bytes to the same key, so a retry cannot do harm.
	UploadRetries int
	// RetryDelay is the first retry's delay, doubled each time (default
	// 100ms).
	RetryDelay time.Duration
	// UploadTimeout bounds one PUT of a level-0 file (default 60 s), so a
	// bucket that stops answering fails the commit — and resets the cell —
	// instead of holding its replies forever.
	UploadTimeout time.Duration
	// NodeLog, when set, carries the epoch's commits after its snapshot:
	// each commit becomes one level-0 file of its own TXID, handed to the
	// node log, and is durable once the node log credits the bundle that
	// holds it (core/nodelog). The log then tiers them into the cell's
	// own prefix, merged, in the background and before it closes (see
	// nodelog.go). Without it every upload is a level-0 file in the
	// cell's prefix.
	NodeLog *nodelog.Log
	// TierAfterRows and TierAfterBytes: with a node log, credited rows
	// are tiered into the cell's prefix once this many wait (defaults 64
	// rows, 1 MiB), and in any case within the node log's TierAge of the
	// oldest.
	TierAfterRows  int
	TierAfterBytes int
	// SpoolDir is where, with page capture, the database as opened waits
	// for the epoch's snapshot, in an unlinked temporary file (default: the
	// system's temporary directory). The snapshot is that image with the
	// first commit's pages laid over it.
	SpoolDir string

	// eraPositions, when set (tests), replaces ladderMaxPositions.
	eraPositions int
}

// DefaultRetention is Options.Retention's default: Durable Objects keep
// 30 days of point-in-time history.
const DefaultRetention = 30 * 24 * time.Hour

// Log is the LTX log. It implements durability.Log.
type Log struct {
	opts Options
}

// New returns an LTX log writing to opts.Store.
func New(opts Options) (*Log, error) {
	if opts.Store == nil {
		return nil, errors.New("ltxlog: Options.Store is required")
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.CompactAfter == 0 {
		opts.CompactAfter = 64
		if opts.Retention > 0 {
			opts.CompactAfter = 2
		}
	}
	if opts.FullMergePercent == 0 {
		opts.FullMergePercent = 100
	}
	if opts.RangeFanout == 0 {
		opts.RangeFanout = 8
	}
	if opts.UploadRetries == 0 {
		opts.UploadRetries = 3
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = 100 * time.Millisecond
	}
	if opts.UploadTimeout == 0 {
		opts.UploadTimeout = 60 * time.Second
	}
	if opts.TierAfterRows == 0 {
		opts.TierAfterRows = 64
	}
	if opts.TierAfterBytes == 0 {
		opts.TierAfterBytes = 1 << 20
	}
	return &Log{opts: opts}, nil
}

var (
	_ durability.Log         = (*Log)(nil)
	_ durability.Prober      = (*Log)(nil)
	_ durability.BucketAcker = (*Log)(nil)
)

// AcksFromBucket is true: a commit resolves once its LTX file (or, with a
// node log, its bundle) is stored.
func (l *Log) AcksFromBucket() bool { return true }

// Holds reports whether the bucket holds any epoch of the cell's LTX log
// (one listing of the cell's epoch directories).
func (l *Log) Holds(ctx context.Context, cell string) (bool, error) {
	epochs, err := listEpochs(ctx, l.opts.Store, cell)
	return len(epochs) > 0, err
}

// restoreInto replaces conn's database with the newest chain for a writer
// of epoch. A driver that restores from a file it provides
// (driver.ImageRestorer) gets the pages written into that file as they are
// decoded; others get the image built in memory.
func restoreInto(ctx context.Context, s store.Store, cell string, epoch uint64, opts RestoreOptions, conn driver.Conn) (*Result, error) {
	if ir, ok := conn.(driver.ImageRestorer); ok {
		var res *Result
		filled := false
		err := ir.RestoreWith(ctx, func(w driver.ImageFile) error {
			filled = true
			var err error
			res, err = restoreForTo(ctx, s, cell, opts, epoch, w)
			return err
		})
		switch {
		case filled && err != nil && res == nil:
			return nil, err // the restore's own failure (or nothing to restore)
		case filled && err != nil:
			return nil, fmt.Errorf("restore into the database: %w", err)
		case filled:
			return res, nil
		case !errors.Is(err, driver.ErrUnsupported):
			return nil, err
		}
	}
	res, err := restoreFor(ctx, s, cell, opts, epoch)
	if err != nil {
		return nil, err
	}
	if err := conn.Restore(ctx, res.Image); err != nil {
		return nil, fmt.Errorf("restore into the database: %w", err)
	}
	return res, nil
}

// Open starts the cell's log for epoch. With restore, the newest chain in
// the bucket replaces the database first (an empty bucket leaves it as it
// is: empty, since the runtime asks for a restore only of an empty
// database — under fleet ownership it deletes the local file first).
// Either way, the epoch's first commit uploads a snapshot of the whole
// database.
//
// Restoring, Open refuses (*durability.EpochInUseError) when the bucket
// already holds files in this epoch or a newer one (celld refuses the same
// way), and
// fails with the restore's error when the newest chain cannot be rebuilt
// (a gap, a corrupt file, an epoch whose snapshot is missing:
// *ltx.MissingSnapshotError): a cell is never served, nor re-snapshotted,
// from a guessed state.
func (l *Log) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cellKey, epoch, conn := req.Cell, req.Epoch, req.Conn
	var restored, fromRequest *durability.Bookmark
	if req.Restore {
		// A restore request recorded for this session (restorenext.go)
		// shows in the listing of the cell's epochs: its bookmark is
		// restored instead of the newest state.
		opts, rq, err := openRestoreOptions(ctx, l.opts.Store, cellKey)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", cellKey, err)
		}
		fromRequest = rq
		res, err := restoreInto(ctx, l.opts.Store, cellKey, epoch, opts, conn)
		switch {
		case errors.Is(err, ErrNothingToRestore) && fromRequest == nil:
			// A bucket that holds nothing for the cell leaves the (empty)
			// database as it is.
		case err != nil:
			return nil, fmt.Errorf("restore %s: %w", cellKey, err)
		default:
			l.opts.Logger.Info("restored cell from bucket", "cell", cellKey, "txid", res.TXID, "epoch", res.Epoch, "files", len(res.Files))
			restored = &durability.Bookmark{Epoch: res.Epoch, TXID: uint64(res.TXID)}
		}
	}
	pageSize, err := conn.PageSize(ctx)
	if err != nil {
		return nil, err
	}
	// With page capture the first commit brings only its own pages, so
	// the snapshot needs the rest of the database: it is read at the
	// epoch's first commit (Append), the database as that commit left it,
	// not here, so an activation that never writes reads nothing and holds
	// no copy while it stays open. Without capture, the first commit's
	// image is the snapshot.
	c := newCellLog(l.opts, cellKey, epoch, nil, pageSize, req.PagesCaptured, req.SyncLocal)
	c.restored = restored
	if fromRequest != nil && restored != nil {
		l.opts.Logger.Info("restored cell to the bookmark its restore request names", "cell", cellKey, "bookmark", fromRequest.String(), "epoch", epoch)
		c.next.from = fromRequest
	}
	if req.PagesCaptured {
		c.baseConn = conn
	}
	return c, nil
}
