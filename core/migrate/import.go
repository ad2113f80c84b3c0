package migrate

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/shard"
	"github.com/cellb/cellb/core/store"
)

// SingleHostShards is the shard count core/host opens a data directory
// with; an import into a directory no process has opened yet creates it
// with this count (an existing directory keeps its own: shards.json).
const SingleHostShards = 16

// Target is where the cell lives: a fleet's bucket (cellb serve --bucket)
// or one host's data directory (cellb serve --data-dir).
type Target struct {
	// Bucket is the fleet's bucket, or on one host the embedded bucket
	// (<DataDir>/bucket). Required.
	Bucket store.Store
	// DataDir, when set, is one host's data directory: the cell is taken
	// by its shard lock (<DataDir>/shards) and refused if its local
	// database exists (<DataDir>/cells/<Class>/<id>.sqlite3). Empty: the
	// bucket is a fleet's, and the cell is taken under a temporary fleet
	// node.
	DataDir string
	// Node is the temporary fleet node's id (default: import_<32 hex>).
	Node string
	// TTL is the temporary node's lease (default fleet.DefaultTTL).
	TTL    time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
	// Retry is how the snapshot's upload is retried (default: 3 retries,
	// 200 ms apart and doubling, 10 minutes an attempt).
	Retry store.Retry
}

// Result says what Import wrote.
type Result struct {
	Cell  string
	Epoch uint64 // the epoch the snapshot opens
	Key   string // the snapshot's key
	Size  int64  // the snapshot's size in bytes
	Pages uint32 // the database's pages
}

// Import writes im as the state of cell, which must never have been
// written (*CellWrittenError), then releases the cell; see the package
// documentation. Nothing of the cell is written when the import is
// refused.
func Import(ctx context.Context, t Target, cellKey string, im *Image) (*Result, error) {
	if err := cell.ValidateCellKey(cellKey); err != nil {
		return nil, err
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	local := ""
	if t.DataDir != "" {
		p, err := cell.DatabasePath(filepath.Join(t.DataDir, "cells"), cellKey)
		if err != nil {
			return nil, err
		}
		local = p
	}
	// Refuse before taking anything; checked again once the cell is held.
	if err := neverWritten(ctx, t.Bucket, cellKey, local); err != nil {
		return nil, err
	}
	ls, closeLease, err := openLease(ctx, t, log)
	if err != nil {
		return nil, err
	}
	defer closeLease()
	g, err := ls.TryAcquire(ctx, cellKey)
	if err != nil {
		return nil, fmt.Errorf("take %s: %w", cellKey, err)
	}
	res, err := write(ctx, t, g, cellKey, local, im, log)
	if rerr := g.Release(context.WithoutCancel(ctx)); rerr != nil && err == nil {
		err = fmt.Errorf("release %s (its state is imported; the next activation takes it once the release or the lease lapses): %w", cellKey, rerr)
	}
	return res, err
}

// write writes the snapshot under g: the cell is held, so nothing else
// writes it meanwhile.
func write(ctx context.Context, t Target, g lease.Grant, cellKey, local string, im *Image, log *slog.Logger) (*Result, error) {
	if err := neverWritten(ctx, t.Bucket, cellKey, local); err != nil {
		return nil, err
	}
	if r, ok := g.(lease.EpochRecorder); ok {
		if err := r.RecordEpoch(ctx); err != nil {
			return nil, err
		}
	}
	epoch := g.Epoch()
	now := clock.Or(t.Clock).Now().UnixMilli()
	h := ltx.Header{PageSize: im.pageSize, Commit: im.pages, MinTXID: 1, MaxTXID: 1, Timestamp: now}
	key := ltx.Key(cellKey, epoch, 0, 1, 1)
	var written ltx.Written
	body := func() io.ReadCloser {
		pr, pw := io.Pipe()
		go func() {
			w, err := ltx.EncodeTo(pw, h, im.eachPage())
			if err == nil {
				written = w
			}
			pw.CloseWithError(err)
		}()
		return pr
	}
	retry := t.Retry
	if retry.Retries == 0 && retry.Delay == 0 {
		retry = store.Retry{Retries: 3, Delay: 200 * time.Millisecond, Timeout: 10 * time.Minute, Clock: t.Clock, Logger: log}
	}
	popts := store.PutOptions{Condition: store.IfAbsent, Metadata: map[string]string{ltx.MetadataTimestamp: ltx.FormatTimestamp(now)}}
	err := store.PutFromRetrying(t.Bucket, key, body, popts, retry)
	if store.IsPreconditionFailed(err) && written.Size > 0 {
		// An earlier attempt whose answer was lost wrote it, or another
		// writer did: the same size and trailer say which.
		tail := make([]byte, ltx.TrailerSize)
		binary.BigEndian.PutUint64(tail, written.PostApplyChecksum)
		binary.BigEndian.PutUint64(tail[8:], written.FileChecksum)
		err = durability.Collision(ctx, t.Bucket, durability.FirstObject{Cell: cellKey, Epoch: epoch, Key: key, Size: written.Size, Tail: tail}, log)
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", key, err)
	}
	if err := lease.CheckAck(ctx, g); err != nil {
		return nil, fmt.Errorf("%s was written, but the cell was lost meanwhile: %w", key, err)
	}
	log.Info("imported", "cell", cellKey, "epoch", epoch, "key", key, "bytes", written.Size)
	return &Result{Cell: cellKey, Epoch: epoch, Key: key, Size: written.Size, Pages: im.pages}, nil
}

// neverWritten refuses a cell that holds anything but its ownership
// record in the bucket (any log, any epoch) or, on one host, a local
// database.
func neverWritten(ctx context.Context, s store.Store, cellKey, local string) error {
	if local != "" {
		if _, err := os.Stat(local); err == nil {
			return &CellWrittenError{Cell: cellKey, Found: local}
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	own := layout.OwnKey(cellKey)
	found := ""
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: layout.CellPrefix(cellKey)}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if o.Key != own {
				found = o.Key
				return errStop
			}
		}
		return nil
	})
	if found != "" {
		return &CellWrittenError{Cell: cellKey, Found: found}
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", layout.CellPrefix(cellKey), err)
	}
	return nil
}

var errStop = errors.New("stop")

// openLease is the lease an activation would take the cell by: the shard
// lock on one host, celld's protocol under a temporary node in a fleet.
func openLease(ctx context.Context, t Target, log *slog.Logger) (lease.Lease, func(), error) {
	if t.DataDir != "" {
		dir := filepath.Join(t.DataDir, "shards")
		l, err := shard.Open(dir, SingleHostShards, shard.WithLogger(log))
		var mismatch *shard.CountMismatchError
		if errors.As(err, &mismatch) {
			l, err = shard.Open(dir, mismatch.Layout, shard.WithLogger(log))
		}
		if err != nil {
			return nil, nil, err
		}
		return l, func() { l.Close() }, nil
	}
	node := t.Node
	if node == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, err
		}
		node = "import_" + hex.EncodeToString(b[:])
	}
	n, err := fleet.Join(ctx, fleet.Options{Store: t.Bucket, Node: node, TTL: t.TTL, Clock: t.Clock, Logger: log, RecoveryWait: -1})
	if err != nil {
		return nil, nil, fmt.Errorf("join the fleet as a temporary node: %w", err)
	}
	return n, func() { n.Close(context.WithoutCancel(ctx)) }, nil
}
