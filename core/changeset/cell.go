package changeset

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/internal/imagespool"
	"github.com/cellb/cellb/core/store"
)

// ErrClosed fails commits still pending when a log is closed without a
// final flush (a crash, as EvictAll models it).
var ErrClosed = errors.New("changeset: log closed before the commit was uploaded")

// ErrInTransaction: a snapshot was due while the connection had a
// transaction open, inside which SQLite cannot copy the database.
var ErrInTransaction = errors.New("changeset: a snapshot is due but the connection is inside a transaction")

// UploadError is a failed upload; every commit in it and after it fails.
type UploadError struct {
	Key string
	Err error
}

func (e *UploadError) Error() string { return fmt.Sprintf("upload %s: %v", e.Key, e.Err) }
func (e *UploadError) Unwrap() error { return e.Err }

// The runtime marks its own statements so a driver's statement cache
// never hands them to user code; the log's statements are the runtime's.
const (
	sqlSchemaVersion = `/*cellb*/ SELECT schema_version FROM pragma_schema_version`
	// sqlUnrecordable lists tables whose changes a session misses: virtual
	// tables and tables without a PRIMARY KEY (SQLite's own tables, such
	// as sqlite_sequence, included — see docs/changeset-format.md).
	sqlUnrecordable = `/*cellb*/ SELECT s.name FROM sqlite_schema AS s
WHERE s.type = 'table' AND s.name NOT LIKE 'sqlite\_%' ESCAPE '\'
  AND (s.sql LIKE 'CREATE VIRTUAL TABLE%'
       OR NOT EXISTS (SELECT 1 FROM pragma_table_info(s.name) AS p WHERE p.pk > 0))`
)

// entry is one commit waiting for upload.
type entry struct {
	seq uint64
	rec *Record // nil: the commit recorded nothing
	// img is a snapshot's image (rec.Data is then nil), spooled page by
	// page from the database when the commit was appended: the database
	// has moved on by the time the upload runs. The upload closes it.
	img *imagespool.Spool
}

type cellLog struct {
	opts  Options
	cell  string
	epoch uint64
	log   *slog.Logger

	// Capture state: touched only on the runtime's thread (Append, Close).
	conn          driver.Conn
	sc            driver.Sessioner
	sess          driver.Session
	started       bool  // the epoch's first snapshot has been taken
	schema        int64 // schema_version at the last snapshot
	unrecordable  string
	lastSnapBytes int
	bytesSince    int
	lastSeq       uint64 // the sequence number of the newest commit in this epoch's files

	pipe *durability.Pipeline[*entry]

	// Upload side, touched only by the pipeline's uploader (and by Open
	// before the first commit).
	uploaded []string // this epoch's keys a newer snapshot supersedes
}

func newCellLog(opts Options, cell string, epoch uint64, conn driver.Conn, sc driver.Sessioner, sess driver.Session, syncLocal func() error) *cellLog {
	c := &cellLog{
		opts: opts, cell: cell, epoch: epoch,
		log:  opts.Logger.With("cell", cell, "epoch", epoch),
		conn: conn, sc: sc, sess: sess,
	}
	c.pipe = durability.NewPipeline(durability.PipelineOptions[*entry]{
		Upload: c.upload, Sync: syncLocal, Closed: ErrClosed, Logger: c.log, Clock: opts.Clock,
		FailMessage: "changeset upload failed; the cell's later commits will not be acknowledged",
	})
	return c
}

// NeedsImage: the log reads changesets (and, for snapshots, the image)
// from the connection itself.
func (c *cellLog) NeedsImage() bool { return false }

// Append takes the commit's changes from the session (or a snapshot when
// one is due) and queues them. It does no bucket I/O.
func (c *cellLog) Append(cm durability.Commit) durability.Durable {
	if cm.Pages != nil {
		cm.Pages.Release() // the session, not the pages, describes the commit
	}
	if err := c.pipe.Err(); err != nil {
		return durability.Resolved(err)
	}
	// The file's own numbering, not cm.Seq: it continues after files an
	// earlier log left in the same epoch.
	seq := c.lastSeq + 1
	rec, img, err := c.capture(context.Background(), seq)
	return c.pipe.Append(func() (*entry, error) {
		if err != nil {
			return nil, fmt.Errorf("changeset: record commit %d: %w", cm.Seq, err)
		}
		c.lastSeq = seq
		return &entry{seq: seq, rec: rec, img: img}, nil
	})
}

// capture reads what commit seq changed: the session's changeset, or a
// whole image when changesets cannot describe it, copied from the
// database page by page into a spool (the record's Data is then nil).
func (c *cellLog) capture(ctx context.Context, seq uint64) (*Record, *imagespool.Spool, error) {
	rec, img, err := c.captureRecord(ctx, seq)
	if err != nil {
		img.Close()
		return nil, nil, err
	}
	return rec, img, nil
}

func (c *cellLog) captureRecord(ctx context.Context, seq uint64) (rec *Record, img *imagespool.Spool, err error) {
	schema, err := c.queryInt(ctx, sqlSchemaVersion)
	if err != nil {
		return nil, nil, err
	}
	snapshot := !c.started || schema != c.schema || c.unrecordable != "" ||
		(c.bytesSince > c.lastSnapBytes && c.bytesSince > c.opts.MinSnapshotBytes)
	if !snapshot {
		cs, err := c.sess.Changeset()
		if err == nil {
			if err := c.restartSession(ctx); err != nil {
				return nil, img, err
			}
			if len(cs) == 0 {
				return nil, nil, nil
			}
			c.bytesSince += len(cs)
			return &Record{Seq: seq, Kind: KindChangeset, Data: cs}, nil, nil
		}
		// The session cannot describe what happened (SQLite answers
		// SQLITE_SCHEMA after a rolled-back ALTER TABLE, for one): the
		// image can.
		c.log.Debug("no changeset for this commit; taking a snapshot", "err", err)
	}
	if c.conn.InTransaction() {
		return nil, nil, ErrInTransaction
	}
	img, err = imagespool.FromConn(ctx, c.opts.SpoolDir, c.conn)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := c.restartSession(ctx); err != nil {
		return nil, img, err
	}
	un, err := c.findUnrecordable(ctx)
	if err != nil {
		return nil, img, err
	}
	if un != "" && un != c.unrecordable {
		c.log.Warn("a table's changes cannot be recorded as changesets; every commit uploads a snapshot while it exists", "table", un)
	}
	c.started, c.schema, c.unrecordable = true, schema, un
	c.lastSnapBytes, c.bytesSince = int(img.Size()), 0
	return &Record{Seq: seq, Kind: KindImage}, img, nil
}

// Rebind moves the session to another connection on the same database
// (durability.Rebinder): nil ends it with the connection the runtime is
// about to close; a new connection starts a new one. The runtime rebinds
// only between commits, when the session has recorded nothing since the
// last, so nothing is missed.
func (c *cellLog) Rebind(ctx context.Context, conn driver.Conn) error {
	if conn == nil {
		if c.sess != nil {
			_ = c.sess.Close() // as in Close: the connection goes next
		}
		c.sess, c.conn, c.sc = nil, nil, nil
		return nil
	}
	sc, ok := conn.(driver.Sessioner)
	if !ok {
		return &NoSessionsError{Conn: fmt.Sprintf("%T", conn)}
	}
	sess, err := sc.StartSession(ctx)
	if err != nil {
		return fmt.Errorf("changeset: start session: %w", err)
	}
	c.conn, c.sc, c.sess = conn, sc, sess
	return nil
}

func (c *cellLog) restartSession(ctx context.Context) error {
	if err := c.sess.Close(); err != nil {
		return fmt.Errorf("close session: %w", err)
	}
	s, err := c.sc.StartSession(ctx)
	if err != nil {
		return fmt.Errorf("start session: %w", err)
	}
	c.sess = s
	return nil
}

func (c *cellLog) queryInt(ctx context.Context, sql string) (int64, error) {
	rows, err := c.conn.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%q returned no row", sql)
	}
	v, ok := rows.Values()[0].(int64)
	if !ok {
		return 0, fmt.Errorf("%q returned %T", sql, rows.Values()[0])
	}
	return v, rows.Close()
}

// findUnrecordable returns the first table a session cannot record, or "".
func (c *cellLog) findUnrecordable(ctx context.Context) (string, error) {
	rows, err := c.conn.Query(ctx, sqlUnrecordable)
	if err != nil {
		return "", fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	name := ""
	if rows.Next() {
		name, _ = rows.Values()[0].(string)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("list tables: %w", err)
	}
	return name, rows.Close()
}

// Close stops the log and ends its session. final waits for every queued
// commit to be uploaded; otherwise queued commits fail with ErrClosed.
func (c *cellLog) Close(ctx context.Context, final bool) error {
	if c.sess != nil {
		_ = c.sess.Close() // on the runtime's thread, like every use of conn
	}
	return c.pipe.Close(ctx, final)
}

// upload stores a batch (the pipeline's uploader). Under an epoch (not
// 0, which lease.None reopens) the epoch's first file is its first commit
// alone (...01-...01.snap), written create-only: if another writer
// already started this epoch, the write fails instead of replacing that
// writer's snapshot.
func (c *cellLog) upload(batch []*entry) error {
	if batch[0].seq == 1 && c.epoch > 0 {
		if err := c.uploadFile(batch[:1], true); err != nil {
			return err
		}
		if batch = batch[1:]; len(batch) == 0 {
			return nil
		}
	}
	return c.uploadFile(batch, false)
}

// uploadFile writes a batch as one file. A snapshot in the batch makes the
// records before it redundant: the image already holds their effects. A
// snapshot's image streams from its spool while the file uploads (held in
// memory only up to the spool's 1 MiB); a retry encodes the same bytes
// again.
func (c *cellLog) uploadFile(batch []*entry, createOnly bool) error {
	f := &File{Cell: c.cell, Epoch: c.epoch, MinSeq: batch[0].seq, MaxSeq: batch[len(batch)-1].seq}
	var img *imagespool.Spool
	defer func() {
		for _, e := range batch {
			e.img.Close()
			e.img = nil
		}
	}()
	for _, e := range batch {
		if e.rec == nil {
			continue
		}
		if e.rec.Kind == KindImage {
			f.Records = f.Records[:0]
			img = e.img
		}
		f.Records = append(f.Records, *e.rec)
	}
	now := c.opts.Clock.Now()
	f.Timestamp = now.UnixMilli()
	key := Key(c.cell, c.epoch, f.MinSeq, f.MaxSeq, f.Snapshot())
	var popts store.PutOptions
	if createOnly {
		popts.Condition = store.IfAbsent
	}
	retry := store.Retry{
		Retries: c.opts.UploadRetries, Delay: c.opts.RetryDelay, Timeout: c.opts.UploadTimeout,
		Clock: c.opts.Clock, Stop: c.pipe.Abandoned, Logger: c.log,
	}
	first := durability.FirstObject{Cell: c.cell, Epoch: c.epoch, Key: key}
	var err error
	if img == nil || img.Size() <= imagespool.InMemory {
		// Small enough to encode whole, as a plain PUT.
		if img != nil {
			f.Records[0].Data = make([]byte, img.Size())
			if _, err := img.ReadAt(f.Records[0].Data, 0); err != nil && !errors.Is(err, io.EOF) {
				return &UploadError{Key: key, Err: fmt.Errorf("read the spooled snapshot: %w", err)}
			}
		}
		data, err := Encode(f)
		if err != nil {
			return fmt.Errorf("encode commits %d-%d: %w", f.MinSeq, f.MaxSeq, err)
		}
		first.Data = data
		err = store.PutRetrying(c.opts.Store, key, data, popts, retry)
		if err = c.collision(err, createOnly, first); err != nil {
			return &UploadError{Key: key, Err: err}
		}
	} else {
		if _, _, err := encodeStream(f, img.Reader()); err != nil {
			return fmt.Errorf("encode commits %d-%d: %w", f.MinSeq, f.MaxSeq, err)
		}
		var last *crcReader
		var size int64
		body := func() io.ReadCloser {
			r, n, _ := encodeStream(f, img.Reader())
			last, size = r.(*crcReader), n
			return io.NopCloser(r)
		}
		err = store.PutFromRetrying(c.opts.Store, key, body, popts, retry)
		if createOnly && store.IsPreconditionFailed(err) {
			// The file's last 4 bytes are a CRC-32C of every byte before
			// them: with the size, what tells this log's own object.
			if !last.done || len(last.tail) > 0 {
				if _, derr := io.Copy(io.Discard, last); derr != nil {
					return &UploadError{Key: key, Err: derr}
				}
			}
			first.Size, first.Tail = size, binary.BigEndian.AppendUint32(nil, last.h.Sum32())
		}
		if err = c.collision(err, createOnly, first); err != nil {
			return &UploadError{Key: key, Err: err}
		}
	}
	if f.Snapshot() {
		// Files before a stored snapshot are never read again.
		for _, old := range c.uploaded {
			if err := c.opts.Store.Delete(context.Background(), old); err != nil && !store.IsNotFound(err) {
				c.log.Warn("deleting a superseded changeset file failed", "key", old, "err", err)
			}
		}
		c.uploaded = c.uploaded[:0]
	}
	c.uploaded = append(c.uploaded, key)
	return nil
}

// collision decides a create-only write that found its key taken
// (durability.Collision); other outcomes pass through.
func (c *cellLog) collision(err error, createOnly bool, first durability.FirstObject) error {
	if !createOnly || !store.IsPreconditionFailed(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.UploadTimeout)
	defer cancel()
	return durability.Collision(ctx, c.opts.Store, first, c.log)
}
