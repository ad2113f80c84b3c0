// Package durability defines the Log port: where a cell's commits go to
// become durable, and how the runtime learns that they are.
//
// The runtime hands every commit to the cell's CellLog in commit order,
// right after the local commit, and holds each reply behind the output gate
// until the Durable future of every commit made before the reply resolves.
// Implementations: Local (the local commit is durable), the LTX log
// (celld's format), the changeset log and backups.
package durability

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// Log opens per-cell logs.
type Log interface {
	// Open starts logging the cell req.Cell under lease epoch req.Epoch on
	// the cell's open database req.Conn (see OpenRequest).
	Open(ctx context.Context, req OpenRequest) (CellLog, error)
}

// Prober is implemented by logs that can tell, without a database, whether
// they hold anything for a cell. The runtime asks before it activates a cell
// that has no local database file: a cell the log holds nothing for opens
// on an in-memory database, and its file and log are created with its first
// write (a cell that is only read leaves no trace). A log that does not
// implement it is assumed to hold something, and the file is opened at
// once.
type Prober interface {
	// Holds reports whether the log holds anything at all for the cell
	// (any file of any epoch, complete or not): true sends the runtime
	// down the ordinary path, which restores, or refuses, as Open does.
	Holds(ctx context.Context, cell string) (bool, error)
}

// HoldsAny is a Prober's answer for a log kept under one prefix: whether
// the bucket holds any object under prefix, from one listing of at most one
// key. An empty page with a continuation token (a store may return one)
// is followed.
func HoldsAny(ctx context.Context, s store.Store, prefix string) (bool, error) {
	held := false
	errFound := errors.New("found")
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: prefix, Limit: 1}, func(p store.ListPage) error {
		if len(p.Objects) > 0 || len(p.Prefixes) > 0 {
			held = true
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		err = nil
	}
	return held, err
}

// OpenRequest is what the runtime tells a log when it opens a cell's log.
type OpenRequest struct {
	// Cell is the cell's key.
	Cell string
	// Epoch is the lease epoch the log writes under (0 for lease.None).
	Epoch uint64
	// Conn is the cell's open database. The log may read from it only
	// inside calls the runtime makes (Open, Append, Close), never later
	// from another goroutine.
	Conn driver.Conn
	// Restore asks Open to first replace the database with the log's
	// newest state; a log holding nothing for the cell leaves it as it is.
	// The runtime asks for a restore only of an empty database: when the
	// lease says the bucket wins it deletes the local file before opening
	// it, so a bucket holding nothing starts the cell empty; otherwise it
	// restores only a database that is empty.
	Restore bool
	// PagesCaptured says Conn captures pages: every commit made after Open
	// returns comes to Append with its pages (Commit.Pages), to be laid on
	// the database as Open leaves it. No commit is made on Conn between
	// its opening and Open (a restore starts capture afresh), so none is
	// missed or handed over twice. Otherwise Append gets no pages, and an
	// image (Commit.Image) if the log asks for one (CellLog.NeedsImage).
	// The runtime decides it once, when it opens the database: capture is
	// on when the driver captures pages and the log is not Local. A log
	// never asks the connection (it does not call TakeCommits).
	PagesCaptured bool
	// SyncLocal, when set, is what the local disk needs before the commits
	// written to the local database so far may be acknowledged. The
	// runtime sets it when the local file is kept across activations
	// (single-host shard locks or lease.None) and the driver may leave each
	// commit unsynced (cellb serve runs SQLite with synchronous=NORMAL in
	// WAL mode then): under lease.None, or where the system names no boot,
	// an fsync of the database's files (SyncDatabaseFiles); under a single
	// host's shard locks with a log that acknowledges from the bucket
	// (BucketAcker), the recording of a restart mark once per activation,
	// so that a file that may lack acknowledged commits after a machine
	// restart is rebuilt from the bucket (core/cell, docs/durability.md).
	// A log that acknowledges through a group commit calls it once per
	// group, overlapped with the group's upload, and acknowledges the
	// group only when both are done; a log that acknowledges otherwise
	// ignores it. It may be called from any goroutine: it does not use
	// Conn.
	SyncLocal func() error
}

// Commit is one local commit handed to the log.
type Commit struct {
	// Seq numbers the commits of one CellLog from 1, without gaps.
	Seq uint64
	// Pages are the pages the commit changed, when the driver captures
	// pages; nil otherwise. The log owns them: once it no longer reads
	// them it may call Pages.Release (at most once), so the driver reuses
	// the buffers; a log that keeps them simply never releases.
	Pages *driver.CapturedCommit
	// Image is the whole database taken at commit time, when the log asked
	// for images (NeedsImage) and the driver captures no pages.
	Image []byte
}

// CellLog is one cell's log for one epoch.
type CellLog interface {
	// NeedsImage reports whether Append wants Commit.Image when no pages
	// were captured (a log that diffs images, or a backup).
	NeedsImage() bool
	// Append takes the next commit and returns a future that resolves
	// once it is durable (or failed to become durable). Append must not
	// block on the bucket; it may read the cell's database (Conn), as the
	// LTX log does once an epoch, at its first commit, for the snapshot.
	Append(c Commit) Durable
	// Close flushes what is pending (final is true on an orderly close,
	// false when modelling a crash) and stops the log.
	Close(ctx context.Context, final bool) error
}

// Rebinder is an optional CellLog capability: the log goes on, in the same
// epoch, on another connection to the same database file. The runtime
// releases the connection of a cell that has been idle for a while
// (cell.Options.IdleConnTimeout) only when its log is Local or a
// Rebinder. With no transaction open and every commit it handed over
// durable, it calls Rebind(ctx, nil) and then closes the connection; from
// then on the log must not use any connection. Before it makes the next
// commit it opens a new connection on the same file (which holds what the
// old one left: nothing is written between) and calls Rebind with it; with
// page capture the new connection captures its commits from there.
// Rebind(nil) failing keeps the old connection in use; Rebind(conn)
// failing resets the cell.
type Rebinder interface {
	Rebind(ctx context.Context, conn driver.Conn) error
}

// OwnershipProver is implemented by a CellLog whose Durable already proves
// that the cell's writer still owned it after the commit was stored: the
// node log (core/nodelog) resolves a commit only after a read of the
// node's record, made after the bundle was stored, showed the node's log
// still open, and no node takes a cell of a node whose log is open without
// first fencing that record and folding the log's bundles. The runtime
// then checks the grant (CheckWrite, no bucket read) before a reply,
// instead of the grant's acknowledgement check (lease.CheckAck: for a
// fleet grant, a re-read of the cell's ownership record).
type OwnershipProver interface {
	ProvesOwnership() bool
}

// ProvesOwnership reports whether l's durability proves ownership
// (OwnershipProver).
func ProvesOwnership(l CellLog) bool {
	p, ok := l.(OwnershipProver)
	return ok && p.ProvesOwnership()
}

// OwnImageReader is implemented by a CellLog that wants each commit's
// image (NeedsImage) but reads it itself, page by page, from
// OpenRequest.Conn at Append (driver.ImageWriter), so an image is never
// held whole: the runtime then hands over commits without Image. Append
// runs right after the commit, so the database is the image it wants.
type OwnImageReader interface {
	ReadsOwnImage() bool
}

// ReadsOwnImage reports whether l reads its images itself
// (OwnImageReader).
func ReadsOwnImage(l CellLog) bool {
	r, ok := l.(OwnImageReader)
	return ok && r.ReadsOwnImage()
}

// Durable resolves once a commit is durable.
type Durable interface {
	// Done is closed when the outcome is known.
	Done() <-chan struct{}
	// Err is nil if the commit is durable; otherwise the commit (and
	// every later one) will never be acknowledged.
	Err() error
}

// Resolved is a Durable that is already known.
func Resolved(err error) Durable { return resolved{err} }

type resolved struct{ err error }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (r resolved) Done() <-chan struct{} { return closedChan }
func (r resolved) Err() error            { return r.err }

// Future is a Durable resolved later by its producer.
type Future struct {
	once sync.Once
	done chan struct{}
	err  error
}

// NewFuture returns an unresolved Future.
func NewFuture() *Future { return &Future{done: make(chan struct{})} }

// Resolve sets the outcome; only the first call counts.
func (f *Future) Resolve(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.done)
	})
}

func (f *Future) Done() <-chan struct{} { return f.done }

func (f *Future) Err() error {
	<-f.done
	return f.err
}

// Local treats every local commit as durable: the default when a cell has
// no log.
type Local struct{}

func (Local) Open(ctx context.Context, req OpenRequest) (CellLog, error) {
	return localLog{}, nil
}

type localLog struct{}

func (localLog) NeedsImage() bool                            { return false }
func (localLog) Append(c Commit) Durable                     { return Resolved(nil) }
func (localLog) Close(ctx context.Context, final bool) error { return nil }

// EpochInUseError: the epoch a log was opened for already holds files in
// the bucket, or a newer epoch does: another writer used it. Writing into
// it would replace that writer's files or mix two writers in one
// generation, and lose what it acknowledged, so a log writes nothing and
// the cell is refused. The usual cause is an ownership record (own.json)
// whose epoch is below the newest epoch of the cell's log. Every log with
// epoch generations (the LTX log, the changeset log, backups) reports it.
type EpochInUseError struct {
	Cell   string
	Epoch  uint64 // the epoch the log was opened for
	Key    string // a file of the newest epoch that holds files
	Newest uint64 // that epoch
}

func (e *EpochInUseError) Error() string {
	return fmt.Sprintf("epoch %d of %s is already used by another writer (the bucket holds %s, epoch %d); "+
		"nothing was written into it. The ownership record %s is behind the cell's log: "+
		"a CellB node's next take moves past epoch %d; for other nodes run "+
		"`cellb repair <bucket-url> %s --apply`, which writes the released record {\"node\":\"\",\"epoch\":%d} to it",
		e.Epoch, e.Cell, e.Key, e.Newest, layout.OwnKey(e.Cell), e.Newest, e.Cell, e.Newest)
}
