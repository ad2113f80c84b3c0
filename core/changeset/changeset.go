// Package changeset is the changeset log: a durability.Log that records a
// cell's row changes through SQLite's session extension and uploads them to
// the bucket in CellB's own format (docs/changeset-format.md). celld cannot
// read it; use the LTX log (core/ltxlog) unless a reason to record rows
// rather than pages applies (see docs/durability.md).
//
// The log needs a connection implementing driver.Sessioner. It keeps one
// session open on it. Append runs on the runtime's thread right after the
// commit, before the next turn, so it reads the session's changeset there
// — the changes of every commit since the previous Append — and starts a
// fresh session. durability.Commit carries pages or an image only; the
// changeset is taken from the connection, which Append may use.
//
// Changesets apply only onto the rows they were recorded against, so each
// epoch begins with a snapshot (the whole image, taken at the first
// Append), and a new snapshot replaces changesets whenever they cannot
// describe the commit: the schema changed (sessions do not record DDL), a
// table the session cannot record exists (no PRIMARY KEY, or a virtual
// table), or the changesets since the last snapshot outgrew it. Restore
// loads the newest snapshot and applies the changesets after it in order.
//
// Uploads go strictly in order from one goroutine per cell; commits that
// arrive while an upload is in flight go up together in the next file
// (group commit). A commit is durable once its file is stored; a failed
// upload fails it and every later commit.
package changeset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/store"
)

// ErrNoSessions: the connection does not implement driver.Sessioner, so
// row changes cannot be recorded.
var ErrNoSessions = errors.New("changeset: the connection has no session extension (driver.Sessioner)")

// NoSessionsError names the connection type that lacks sessions; it
// matches ErrNoSessions.
type NoSessionsError struct{ Conn string }

func (e *NoSessionsError) Error() string {
	return fmt.Sprintf("changeset: connection %s does not implement driver.Sessioner", e.Conn)
}
func (e *NoSessionsError) Is(target error) bool { return target == ErrNoSessions }

// Options configure a Log.
type Options struct {
	// Store is the bucket. Required.
	Store store.Store
	// Clock stamps files and paces retries; the real clock by default.
	Clock clock.Clock
	// Logger receives upload failures; slog.Default() if nil.
	Logger *slog.Logger
	// MinSnapshotBytes: a new snapshot is taken once the changesets since
	// the last one exceed both that snapshot's size and this (default
	// 1 MiB), which bounds a restore to about twice the image.
	MinSnapshotBytes int
	// UploadRetries is how often a failed upload is retried before the cell
	// breaks (default 3, negative for none); a retry PUTs the same bytes
	// to the same key.
	UploadRetries int
	// RetryDelay is the first retry's delay, doubled each time (default
	// 100ms).
	RetryDelay time.Duration
	// UploadTimeout bounds one PUT (default 60 s), so a bucket that stops
	// answering fails the commit — and resets the cell — instead of holding
	// its replies forever.
	UploadTimeout time.Duration
	// SpoolDir is where a snapshot's image waits for its upload, in an
	// unlinked temporary file once it is over 1 MiB (default: the system's
	// temporary directory).
	SpoolDir string
}

// Log is the changeset log. It implements durability.Log.
type Log struct {
	opts Options
}

var (
	_ durability.Log         = (*Log)(nil)
	_ durability.Prober      = (*Log)(nil)
	_ durability.BucketAcker = (*Log)(nil)
)

// AcksFromBucket is true: a commit resolves once its changeset is stored.
func (l *Log) AcksFromBucket() bool { return true }

// Holds reports whether the bucket holds any object under the cell's
// changeset prefix (one listing of at most one key).
func (l *Log) Holds(ctx context.Context, cell string) (bool, error) {
	return durability.HoldsAny(ctx, l.opts.Store, CellPrefix(cell))
}

// New returns a changeset log writing to opts.Store.
func New(opts Options) (*Log, error) {
	if opts.Store == nil {
		return nil, errors.New("changeset: Options.Store is required")
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MinSnapshotBytes <= 0 {
		opts.MinSnapshotBytes = 1 << 20
	}
	if opts.UploadRetries == 0 {
		opts.UploadRetries = 3
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = 100 * time.Millisecond
	}
	if opts.UploadTimeout <= 0 {
		opts.UploadTimeout = 60 * time.Second
	}
	return &Log{opts: opts}, nil
}

// Open starts the cell's log for epoch: with restore, the newest snapshot
// and the changesets after it replace the database first (a bucket
// holding nothing for the cell leaves it as it is —
// empty, since the runtime restores only an empty database). It fails with
// *NoSessionsError when conn cannot record changes, with
// *durability.EpochInUseError when the bucket already holds files of this
// epoch or a newer one (epoch 0, lease.None's, is reopened instead), and
// with the restore's error (a gap, a corrupt file, an epoch that lost its
// snapshot: *MissingSnapshotError) rather than start from a guessed state.
func (l *Log) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	cellKey, epoch, conn := req.Cell, req.Epoch, req.Conn
	sc, ok := conn.(driver.Sessioner)
	if !ok {
		return nil, &NoSessionsError{Conn: fmt.Sprintf("%T", conn)}
	}
	if epoch > 0 {
		if err := checkEpochFree(ctx, l.opts.Store, cellKey, epoch); err != nil {
			return nil, err
		}
	}
	if req.Restore {
		res, err := Restore(ctx, l.opts.Store, cellKey, conn)
		switch {
		case errors.Is(err, ErrNothingToRestore):
		case err != nil:
			return nil, fmt.Errorf("changeset: restore %s: %w", cellKey, err)
		default:
			l.opts.Logger.Info("restored cell from changeset log", "cell", cellKey, "epoch", res.Epoch, "seq", res.Seq, "files", len(res.Files))
		}
	}
	// An epoch may be opened again (lease.None keeps epoch 0): number this
	// log's files after every file already there, and count those as
	// superseded once this log's first snapshot is stored.
	existing, err := listEpochFiles(ctx, l.opts.Store, cellKey, epoch)
	if err != nil {
		return nil, fmt.Errorf("changeset: list epoch %d of %s: %w", epoch, cellKey, err)
	}
	// Restoring replaces the database and ends sessions: start ours after.
	sess, err := sc.StartSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("changeset: start session on %s: %w", cellKey, err)
	}
	c := newCellLog(l.opts, cellKey, epoch, conn, sc, sess, req.SyncLocal)
	for _, fi := range existing {
		c.lastSeq = max(c.lastSeq, fi.MaxSeq)
		c.uploaded = append(c.uploaded, fi.Key)
	}
	return c, nil
}

// checkEpochFree refuses an epoch that the cell's changeset log already
// holds, or that a newer epoch follows: another writer used it.
func checkEpochFree(ctx context.Context, s store.Store, cell string, epoch uint64) error {
	epochs, err := listEpochs(ctx, s, cell)
	if err != nil {
		return fmt.Errorf("changeset: list the epochs of %s: %w", cell, err)
	}
	if len(epochs) == 0 || epochs[0] < epoch {
		return nil
	}
	page, err := s.List(ctx, store.ListOptions{Prefix: EpochPrefix(cell, epochs[0]), Limit: 1})
	if err != nil {
		return fmt.Errorf("changeset: list epoch %d of %s: %w", epochs[0], cell, err)
	}
	key := EpochPrefix(cell, epochs[0])
	if len(page.Objects) > 0 {
		key = page.Objects[0].Key
	}
	return &durability.EpochInUseError{Cell: cell, Epoch: epoch, Key: key, Newest: epochs[0]}
}
