// Package driver defines the Driver port: how CellB opens and uses the SQLite
// database of one cell.
//
// Three drivers ship as separate modules (drivers/wasm on ncruces/go-sqlite3,
// drivers/cgo on mattn/go-sqlite3, drivers/modernc on modernc.org/sqlite).
// What a driver can do beyond the required Conn is declared by Capabilities
// and by optional interfaces (PageCapturer, Sessioner, Checkpointer); the
// public suite conformance/drivertest checks every claim.
//
// A Conn is used by one goroutine at a time: the cell's input gate
// serialises every call. Drivers need not be safe for concurrent use of one
// Conn.
package driver

import (
	"context"
	"errors"
	"io"
)

// Driver opens cell databases.
type Driver interface {
	// Name is a short stable name ("wasm", "cgo", "modernc").
	Name() string
	// Capabilities says what this driver's connections support.
	Capabilities() Capabilities
	// Open opens (creating if needed) one database.
	Open(ctx context.Context, cfg Config) (Conn, error)
}

// Capabilities is what a driver declares it supports. A false field is a
// promise too: the optional interface is absent or always fails with
// ErrUnsupported.
type Capabilities struct {
	// PageCapture: Conn implements PageCapturer when opened with
	// Config.PageCapture.
	PageCapture bool
	// Sessions: Conn implements Sessioner (SQLite's session extension).
	Sessions bool
	// Checkpoint: Conn implements Checkpointer (the database runs in WAL
	// mode).
	Checkpoint bool
	// StatementCounters: Exec reports the rows its statements read and
	// wrote (Result.Counted), and Rows implement CountedRows (see
	// counters.go for what is counted).
	StatementCounters bool
}

// Config says which database to open and how.
type Config struct {
	// Path is the database file. Empty opens a private in-memory database.
	Path string
	// PageCapture asks the connection to record the pages each commit
	// changes (see PageCapturer). Ignored by drivers without the capability.
	PageCapture bool
	// Pages, when set, is the pool a capturing connection takes its page
	// buffers from (connections of one runtime share one, so a cell that
	// commits rarely reuses the buffers another released). Nil gives the
	// connection a pool of its own.
	Pages *PagePool
}

// Result is what Exec reports.
type Result struct {
	RowsAffected int64
	LastInsertID int64
	// RowsRead and RowsWritten are what the statements read and wrote,
	// summed over every statement of the Exec; Counted says the driver
	// counted them (Capabilities.StatementCounters), else both are 0.
	RowsRead, RowsWritten int64
	Counted               bool
}

// Conn is one open database.
//
// Values passed as arguments and returned by Rows are nil, int64, float64,
// string or []byte (SQLite's storage classes); drivers also accept int,
// int32, uint32, bool and time.Time-free Go basics listed in NormalizeArg.
type Conn interface {
	// Exec runs one or more statements separated by ';' with positional
	// ('?') arguments bound to the first statement that has parameters.
	Exec(ctx context.Context, sql string, args ...any) (Result, error)
	// Query runs one statement and returns its rows.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)

	// Begin opens a transaction (BEGIN IMMEDIATE: the cell is the only
	// writer, and taking the write lock up front means a commit never
	// fails with SQLITE_BUSY).
	Begin(ctx context.Context) error
	// Commit commits the open transaction.
	Commit(ctx context.Context) error
	// Rollback abandons the open transaction; with none open it is a no-op.
	Rollback(ctx context.Context) error
	// InTransaction reports whether a transaction is open (not autocommit).
	InTransaction() bool

	// PageSize is the database page size in bytes.
	PageSize(ctx context.Context) (int, error)
	// PageCount is the database size in pages.
	PageCount(ctx context.Context) (int64, error)

	// Serialize returns the whole database image (what a file copy of a
	// checkpointed database would hold). It must not be called inside a
	// transaction.
	Serialize(ctx context.Context) ([]byte, error)
	// Restore replaces the whole database with image, which may come from
	// a WAL-mode database (header bytes 18/19 = 2, as celld writes): the
	// driver makes it usable in its own journal mode. After Restore, page
	// capture (if on) starts afresh from the restored image: the restore
	// itself is not reported as a commit.
	Restore(ctx context.Context, image []byte) error

	// SetAuthorizer installs fn as the SQLite authorizer for statements
	// prepared from now on; nil removes it. A denial fails the statement
	// with an error matching ErrNotAuthorized. It governs the caller's SQL
	// only: the driver's own statements (behind PageSize, PageCount,
	// Serialize, Restore, TakeCommits, Checkpoint) keep working under any
	// policy, and the authorizer survives Restore.
	SetAuthorizer(fn Authorizer) error

	// Close closes the database. Pending captured commits are discarded.
	Close() error
}

// Rows iterates over a query's results.
type Rows interface {
	Columns() []string
	// Next advances to the next row; it returns false at the end or on error.
	Next() bool
	// Values is the current row: nil, int64, float64, string or []byte per
	// column. The slice and any []byte in it are valid until the next call
	// to Next or Close.
	Values() []any
	Err() error
	Close() error
}

// ErrUnsupported is returned by optional operations a driver lacks.
var ErrUnsupported = errors.New("not supported by this driver")

// PageCapturer is implemented by connections opened with
// Config.PageCapture on a driver with Capabilities.PageCapture.
type PageCapturer interface {
	// TakeCommits returns, in commit order, every commit made on this
	// connection since the previous call (explicit transactions and
	// autocommit statements alike), with the pages each changed copied at
	// commit time. A rolled-back transaction yields nothing. Replaying the
	// returned commits' pages, in order, onto the image as of the previous
	// call (truncating to each commit's PageCount) gives the current image
	// byte for byte.
	TakeCommits(ctx context.Context) ([]CapturedCommit, error)
}

// ImageWriter is an optional Conn capability: WriteImage writes the image
// Serialize would return (the same bytes) to w a page at a time, without
// holding it whole, and returns how many bytes it wrote. Like Serialize it
// must not be called inside a transaction. A log that needs the image of
// a large database (the LTX log's snapshot) uses it when the driver has it
// and falls back to Serialize otherwise.
type ImageWriter interface {
	WriteImage(ctx context.Context, w io.Writer) (int64, error)
}

// ImageRestorer is an optional Conn capability: RestoreWith is Restore
// with an image the caller writes into a file the driver provides, so a
// large image is never held. fill writes the pages at their offsets
// (WriteAt) and may set the size (Truncate); the file starts empty. When
// fill fails, the database is left as it was and fill's error is
// returned. Otherwise the file is checked and installed exactly as
// Restore checks and installs an image of its bytes.
type ImageRestorer interface {
	RestoreWith(ctx context.Context, fill func(w ImageFile) error) error
}

// ImageFile is where RestoreWith's fill writes the image.
type ImageFile interface {
	io.WriterAt
	Truncate(size int64) error
}

// CapturedCommit is the pages one commit changed.
type CapturedCommit struct {
	PageSize int
	// PageCount is the database size in pages after the commit.
	PageCount uint32
	// Pages are in ascending Pgno order, each exactly PageSize bytes, none
	// beyond PageCount. A page may be listed even if its bytes did not
	// change; every page that did change is listed. They stay valid and
	// unchanged until Release.
	Pages []Page
	// Pool, when set, is the pool the Pages' buffers were taken from;
	// Release returns them there.
	Pool *PagePool
}

// Sessioner is implemented by connections with SQLite's session extension.
type Sessioner interface {
	// StartSession records row changes to the named tables (all tables
	// when none are named) from now on.
	StartSession(ctx context.Context, tables ...string) (Session, error)
	// ApplyChangeset applies a changeset produced by a Session; a conflict
	// aborts the whole apply with an error.
	ApplyChangeset(ctx context.Context, changeset []byte) error
}

// Session collects row changes.
type Session interface {
	// Changeset returns the changes recorded so far (empty if none).
	Changeset() ([]byte, error)
	Close() error
}

// CheckpointMode selects a WAL checkpoint.
type CheckpointMode int

const (
	CheckpointPassive CheckpointMode = iota
	CheckpointFull
	CheckpointRestart
	CheckpointTruncate
)

// Checkpointer is implemented by WAL-mode connections.
type Checkpointer interface {
	Checkpoint(ctx context.Context, mode CheckpointMode) error
}
