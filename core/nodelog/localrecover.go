package nodelog

import (
	"context"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/internal/flock"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// LocalRecovery folds the node logs of a single host's dead processes
// (their LocalSession's lock is free) into the cells' prefixes and deletes
// them. A process runs it before it serves any cell and whenever it takes
// over a shard another process let go, before any grant of it: the cells
// of that shard may have rows only the dead process's log holds.
//
// Recoverers serialize on a second lock per session, <generation>.fold,
// which they wait for: one that finds the session being folded waits until
// the fold ends rather than take the busy lock for a live process. Holding
// it, a recoverer tries the session's own lock: held means the process is
// alive (it is left alone); taken, the session is folded while the lock is
// kept, its bundles are deleted, then its lock files.
type LocalRecovery struct {
	Store store.Store
	// Dir holds the sessions' lock files; Node is the node id they write
	// under (LocalNodeID).
	Dir, Node string
	// Self is the calling process's own generation, never recovered.
	Self string
	// Opts configure each Fold; Current defaults to NoLaterEpoch.
	Opts FoldOptions
}

// LocalRecovered is one session a Recover folded.
type LocalRecovered struct {
	Generation string
	FoldResult
}

// foldLockPoll is how often a recoverer looks again at a session another
// recoverer is folding.
const foldLockPoll = 10 * time.Millisecond

// Recover folds every dead session it finds: those with a lock file in
// Dir and, with bucket set, those the bucket holds bundles of under
// log/<Node>/ (a session whose lock file is gone, say a data directory
// restored from a copy, is dead: a live session's file exists before its
// first bundle). It returns the sessions it folded; the first failure of
// one session does not stop the others, and is returned joined.
func (r LocalRecovery) Recover(ctx context.Context, bucket bool) ([]LocalRecovered, error) {
	gens, err := r.sessions(ctx, bucket)
	if err != nil {
		return nil, err
	}
	var out []LocalRecovered
	var errs []error
	for _, gen := range gens {
		res, folded, err := r.recoverOne(ctx, gen)
		if err != nil {
			errs = append(errs, fmt.Errorf("recover %s: %w", layout.SessionLeader(r.Node, gen), err))
			continue
		}
		if folded {
			out = append(out, LocalRecovered{Generation: gen, FoldResult: res})
		}
	}
	return out, errors.Join(errs...)
}

// sessions lists the generations to look at, sorted, without Self.
func (r LocalRecovery) sessions(ctx context.Context, bucket bool) ([]string, error) {
	seen := map[string]bool{}
	entries, err := os.ReadDir(r.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if gen, ok := strings.CutSuffix(e.Name(), localLockExt); ok && validGeneration(gen) {
			seen[gen] = true
		}
	}
	if bucket {
		page, err := store.ListAll(ctx, r.Store, store.ListOptions{Prefix: layout.NodeLogsPrefix(r.Node), Delimiter: "/"})
		if err != nil {
			return nil, err
		}
		for _, p := range page.Prefixes {
			if gen := strings.TrimSuffix(strings.TrimPrefix(p, layout.NodeLogsPrefix(r.Node)), "/"); validGeneration(gen) {
				seen[gen] = true
			}
		}
	}
	delete(seen, r.Self)
	gens := make([]string, 0, len(seen))
	for g := range seen {
		gens = append(gens, g)
	}
	sort.Strings(gens)
	return gens, nil
}

// validGeneration: a generation names a file and a key segment.
func validGeneration(g string) bool {
	return g != "" && !strings.ContainsAny(g, "/.\\") && len(g) <= 128
}

// recoverOne folds one session if its process is gone. folded is false
// when the session is alive.
func (r LocalRecovery) recoverOne(ctx context.Context, gen string) (res FoldResult, folded bool, err error) {
	foldLock, err := r.waitLock(ctx, filepath.Join(r.Dir, gen+localFoldExt))
	if err != nil {
		return res, false, err
	}
	// Removed while held, whatever the outcome, so fold lock files exist
	// only while a recoverer holds them (tryLockCurrent makes that safe).
	defer func() {
		removeIfExists(foldLock.Name())
		foldLock.Close()
	}()
	lockPath := filepath.Join(r.Dir, gen+localLockExt)
	live, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return res, false, err
	}
	defer live.Close()
	held, err := flock.TryLock(live)
	if err != nil || !held {
		return res, false, err // held: the session's process is alive
	}
	opts := r.Opts
	if opts.Current == nil {
		opts.Current = NoLaterEpoch
	}
	for attempt := 0; ; attempt++ {
		res, err = Fold(ctx, r.Store, r.Node, gen, opts)
		// A bundle gone between the listing and its read: a recoverer
		// before this one deleted it once folded. List again.
		if err == nil || !store.IsNotFound(err) || attempt == 2 {
			break
		}
	}
	if err != nil {
		return res, false, err
	}
	if err := deleteSession(ctx, r.Store, r.Node, gen); err != nil {
		return res, false, err
	}
	// The lock file last, removed while held: a crash before leaves a
	// session with nothing to fold.
	return res, true, removeIfExists(lockPath)
}

// waitLock opens (creating) path and waits for its lock, looking again
// every foldLockPoll until ctx ends.
//
// A fold lock file is removed (while held) once its session is folded, so
// the lock taken may be on a file no longer at path, while another
// recoverer holds the one now there: tryLockCurrent counts only a lock on
// the file path names.
func (r LocalRecovery) waitLock(ctx context.Context, path string) (*os.File, error) {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, err
	}
	clk := clock.Or(r.Opts.Clock)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		held, err := tryLockCurrent(f, path)
		if err != nil {
			f.Close()
			return nil, err
		}
		if held {
			return f, nil
		}
		f.Close()
		t := clk.NewTimer(foldLockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C():
		}
	}
}

// tryLockCurrent is flock.TryLock that reports false (dropping the lock) when f
// is no longer the file at path.
func tryLockCurrent(f *os.File, path string) (bool, error) {
	held, err := flock.TryLock(f)
	if err != nil || !held {
		return false, err
	}
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if err == nil && os.SameFile(fi, pi) {
		return true, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return false, flock.Unlock(f)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// deleteSession deletes every object under a session's prefix.
func deleteSession(ctx context.Context, s store.Store, node, gen string) error {
	var errs []error
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: layout.SessionPrefix(node, gen)}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if err := s.Delete(ctx, o.Key); err != nil && !store.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// NoLaterEpoch is Fold's rule on a single host, which keeps no ownership
// records: a cell epoch's rows may be folded while the bucket holds no
// later epoch of the cell. Every grant of a cell takes a new epoch, and a
// process takes a shard another let go only after recovering the logs of
// the dead ones; so a later epoch means either the session let the epoch
// go after tiering its acknowledged rows, or another recoverer folded this
// session already and the cell has moved on.
func NoLaterEpoch(ctx context.Context, s store.Store, _, cell string, epoch uint64) (bool, error) {
	prefix := ltx.CellPrefix(cell)
	later := false
	err := store.ListEach(ctx, s, store.ListOptions{Prefix: prefix, Delimiter: "/"}, func(p store.ListPage) error {
		for _, d := range p.Prefixes {
			if e, ok := layout.ParseEpochDir(strings.TrimPrefix(d, prefix)); ok && e > epoch {
				later = true
			}
		}
		return nil
	})
	return !later, err
}

// LocalState is a single host's session as its lock files tell it:
// LocalOpen while its process holds its lock, LocalRecovering while a
// recoverer folds it, LocalDead when its lock is free (the process is
// gone; the next recovery folds it), LocalUnknown when dir has no lock
// file for it (another machine's, or recovered since the bucket was
// listed). It takes the session's fold lock, never waiting, before it
// tries the session's lock, so a recoverer never mistakes the look for a
// live process.
func LocalState(dir, gen string) (string, error) {
	if !validGeneration(gen) {
		return LocalUnknown, nil
	}
	lockPath := filepath.Join(dir, gen+localLockExt)
	if _, err := os.Stat(lockPath); errors.Is(err, fs.ErrNotExist) {
		return LocalUnknown, nil
	}
	fl, err := os.OpenFile(filepath.Join(dir, gen+localFoldExt), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	defer fl.Close()
	if held, err := tryLockCurrent(fl, fl.Name()); err != nil || !held {
		return LocalRecovering, err
	}
	defer os.Remove(fl.Name()) // under the lock, as a recoverer removes it
	f, err := os.Open(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return LocalUnknown, nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close() // drops the lock if taken
	held, err := flock.TryLock(f)
	switch {
	case err != nil:
		return "", err
	case held:
		return LocalDead, nil
	}
	return LocalOpen, nil
}

// The states LocalState reports.
const (
	LocalOpen       = "open"
	LocalRecovering = "recovering"
	LocalDead       = "dead"
	LocalUnknown    = "unknown"
)
