package cell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cellb/cellb/core/atomicfile"
	"github.com/cellb/cellb/core/durability"
)

// RestoreBookmarkOnNextSession asks that the cell's storage be restored to
// bookmark b (from CurrentBookmark or BookmarkForTime) the next time the
// object starts (Durable Objects' onNextSessionRestoreBookmark). It
// returns an undo bookmark naming the cell's state when it was asked,
// every commit made before it included (it first waits for them as Sync
// does, so called with the handler's context it ends the turn); restoring
// that bookmark later undoes the restore. The current object keeps
// running on its current state: call Abort to restart it now.
//
// The request is recorded in the bucket by the LTX log before this
// returns, so it survives a crash; the next session, under a new epoch,
// restores b (from the bucket, whatever the local file holds), writes its
// epoch's snapshot of the restored state at once and only then drops the
// request: a crash in between restores b again, never the state before.
// The alarm is not restored: the restored session starts with no alarm
// (set one again in the constructor if the object needs it).
//
// Errors, at the request rather than at the next start:
// *durability.BookmarkSyntaxError for a text that is not a bookmark,
// *durability.BookmarkInFutureError for a state after the current one,
// *durability.BookmarkNotRestorableError for one the bucket no longer
// holds (or never held, or merged into a larger file),
// *durability.NoBookmarksError on a log without point-in-time history,
// *durability.RestoreNeedsEpochError under lease.None, and
// *durability.RestoreUnsupportedError on a log that keeps bookmarks but
// records no requests. With the node log, a bookmark whose row is still
// waiting to be tiered is kept the end of a file; one already merged
// into a wider file is not restorable.
func (s *State) RestoreBookmarkOnNextSession(ctx context.Context, b string) (string, error) {
	inst := s.inst
	if _, ok := inst.db.logs.(durability.Bookmarks); !ok {
		return "", &durability.NoBookmarksError{Cell: inst.key}
	}
	pb, err := durability.ParseBookmark(b)
	if err != nil {
		return "", err
	}
	if inst.grant.Epoch() == 0 {
		return "", &durability.RestoreNeedsEpochError{Cell: inst.key}
	}
	if err := s.Sync(ctx); err != nil {
		return "", err
	}
	inst.mu.Lock()
	cl := inst.db.log
	inst.mu.Unlock()
	if cl == nil {
		// Nothing stored: the log holds nothing for the cell, so no
		// bookmark but the zero one names a state of it.
		if pb.IsZero() {
			return "", &durability.BookmarkNotRestorableError{Cell: inst.key, Bookmark: b, Err: durability.ErrEmptyBookmark}
		}
		return "", &durability.BookmarkInFutureError{Cell: inst.key, Bookmark: b, Current: durability.Bookmark{}.String()}
	}
	nr, ok := cl.(durability.NextSessionRestorer)
	if !ok {
		return "", &durability.RestoreUnsupportedError{Cell: inst.key, Reason: "its log records no restore requests"}
	}
	var mark func() error
	if !inst.grant.BucketWins() {
		// The local file is the primary copy and is opened without a
		// look at the bucket: a mark beside it sends the next
		// activation to the bucket. It is written before the request,
		// so a request in the bucket always has its mark (a mark
		// without a request costs one restore of the newest state). It
		// names this session's epoch, so no older session's cleanup
		// removes it.
		mark = func() error {
			rt := inst.rt
			rt.restoreMarkMu.Lock()
			defer rt.restoreMarkMu.Unlock()
			if err := writeRestoreMark(inst.db.path, pb, inst.grant.Epoch()); err != nil {
				return fmt.Errorf("cell: mark the local database for the restore: %w", err)
			}
			return nil
		}
	}
	undo, err := nr.RequestRestore(ctx, pb, mark)
	if err != nil {
		return "", err
	}
	return undo.String(), nil
}

// restoreMarkPath is the mark beside a local-primary cell's database file
// that its next activation must restore from the bucket: the restore on
// the next session recorded there (the database's own suffixes are
// "-wal", "-shm" and "-journal"; it does not end in ".sqlite3", so the
// alarm scan passes it by).
func restoreMarkPath(dbPath string) string { return dbPath + "-restore" }

// writeRestoreMark writes the mark, synced with its directory: "<bookmark>
// <epoch of the session that asked>".
func writeRestoreMark(dbPath string, b durability.Bookmark, epoch uint64) error {
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(restoreMarkPath(dbPath), []byte(b.String()+" "+strconv.FormatUint(epoch, 10)+"\n"), 0o644)
}

// readRestoreMark reports whether the mark exists, and the epoch of the
// session that wrote it (0 when it cannot be read as written).
func readRestoreMark(dbPath string) (bool, uint64, error) {
	data, err := os.ReadFile(restoreMarkPath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("read the restore mark: %w", err)
	}
	f := strings.Fields(string(data))
	var epoch uint64
	if len(f) == 2 {
		epoch, _ = strconv.ParseUint(f[1], 10, 64)
	}
	return true, epoch, nil
}

// removeRestoreMark removes the mark if a session before epoch wrote it
// (a session at or after it asked for another restore since), under the
// runtime's restoreMarkMu.
func (rt *Runtime) removeRestoreMark(dbPath string, epoch uint64) error {
	rt.restoreMarkMu.Lock()
	defer rt.restoreMarkMu.Unlock()
	ok, by, err := readRestoreMark(dbPath)
	if err != nil || !ok || by >= epoch {
		return err
	}
	if err := os.Remove(restoreMarkPath(dbPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dbPath))
}

// restoredFromRequest reports the log's RestoreRequestedOpen when its Open
// restored a recorded request.
func (db *database) restoredFromRequest() (durability.RestoreRequestedOpen, bool) {
	rr, ok := db.log.(durability.RestoreRequestedOpen)
	if !ok {
		return nil, false
	}
	_, from := rr.RestoredFromRequest()
	return rr, from
}

// settleRestoreMark removes the restore mark once the log has dropped the
// request this session restored (its snapshot is stored), unless the
// instance ends first: the mark then sends the next activation to the
// bucket again, which holds the restored state by then or the request.
func (inst *instance) settleRestoreMark(rr durability.RestoreRequestedOpen) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-inst.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := rr.RestoreSettled(ctx); err != nil {
		return
	}
	if err := inst.rt.removeRestoreMark(inst.db.path, inst.grant.Epoch()); err != nil {
		inst.rt.logger.Warn("cell: could not remove the restore mark; the next activation restores from the bucket again", "cell", inst.key, "err", err)
	}
}

// clearRestoredAlarm deletes the alarm a restored database holds: the
// alarm is not part of what a bookmark restores. The caller holds the
// activation's transaction open.
func (inst *instance) clearRestoredAlarm(ctx context.Context) error {
	if _, err := inst.db.conn.Exec(ctx, sqlAlarmDelete, inst.key); err != nil {
		return fmt.Errorf("clear the restored alarm: %w", err)
	}
	return nil
}
