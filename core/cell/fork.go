package cell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/lease"
)

// Fork copies the state of the cell src into the cell dst, which must never
// have been written (Durable Objects' storage.snapshot() restored into a
// new object with onNextSessionRestore()). bookmark names the state to copy
// (State.CurrentBookmark, State.BookmarkForTime); "" copies the newest
// state the bucket holds. It returns the bookmark copied. Keys are cell
// keys ("<Class>:<id>", Namespace.Key); the classes may differ.
//
// The destination is taken like any activation: the runtime acquires its
// lease (under the fleet, its ownership record), writes the copy as the
// destination's log in that grant's epoch, and releases it; the next call
// to dst, on any node, activates it under a newer epoch and restores the
// copy. On a store that copies objects itself (store.Copier: S3, GCS,
// Azure, files) no cell-sized data passes through this node. The first
// commit of that activation makes the copied storage the destination's own
// and drops the source's alarm: a fork never inherits an alarm.
//
// A destination that is active here, has a local database, or holds
// anything in the bucket is a *durability.ForkDestinationWrittenError. A
// runtime whose log keeps no point-in-time history, or whose lease has no
// epochs (lease.None), is a *durability.NoForkError.
func (rt *Runtime) Fork(ctx context.Context, src, dst, bookmark string) (string, error) {
	for _, k := range []string{src, dst} {
		if _, err := DatabasePath(rt.opts.DataDir, k); err != nil {
			return "", err
		}
	}
	var at durability.Bookmark
	if bookmark != "" {
		var err error
		if at, err = durability.ParseBookmark(bookmark); err != nil {
			return "", err
		}
	}
	forker, ok := rt.log.(durability.Forker)
	if !ok {
		return "", &durability.NoForkError{Cell: src, Reason: "the durability mode keeps no point-in-time history (fork needs the LTX log)"}
	}
	if src == dst {
		return "", &durability.ForkDestinationWrittenError{Cell: dst, What: "it is the source"}
	}
	// A written destination is refused before its lease is asked for (its
	// owner would refuse first, naming itself); the log checks again
	// under the grant.
	if p, ok := rt.log.(durability.Prober); ok {
		held, err := p.Holds(ctx, dst)
		if err != nil {
			return "", fmt.Errorf("fork: look for %s in the log: %w", dst, err)
		}
		if held {
			return "", &durability.ForkDestinationWrittenError{Cell: dst, What: "its log in the bucket"}
		}
	}
	release, err := rt.holdForFork(dst)
	if err != nil {
		return "", err
	}
	defer release()
	grant, err := rt.lease.TryAcquire(ctx, dst)
	if err != nil {
		return "", fmt.Errorf("fork: take %s: %w", dst, err)
	}
	defer grant.Release(context.WithoutCancel(ctx))
	if grant.Epoch() == 0 {
		return "", &durability.NoForkError{Cell: src, Reason: "the lease gives no epochs to write the copy under (fork needs a fleet or shard lease)"}
	}
	if !grant.BucketWins() {
		path, _ := DatabasePath(rt.opts.DataDir, dst)
		if _, err := os.Lstat(path); err == nil {
			return "", &durability.ForkDestinationWrittenError{Cell: dst, What: path}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("fork: look for the local database: %w", err)
		}
	}
	if r, ok := grant.(lease.EpochRecorder); ok {
		if err := r.RecordEpoch(ctx); err != nil {
			return "", fmt.Errorf("fork: record the epoch of %s: %w", dst, err)
		}
	}
	res, err := forker.Fork(ctx, durability.ForkRequest{Source: src, Dest: dst, At: at, Epoch: grant.Epoch()})
	if err != nil {
		return "", err
	}
	if err := lease.CheckAck(ctx, grant); err != nil {
		return "", fmt.Errorf("fork: %s was taken from this node during the copy: %w", dst, err)
	}
	rt.logger.Info("forked cell", "from", src, "to", dst, "at", res.At.String(), "files", res.Files, "copied_in_bucket", res.Copied)
	return res.At.String(), nil
}

// holdForFork keeps dst from activating on this runtime while a fork
// writes it, and refuses a dst that is active here.
func (rt *Runtime) holdForFork(dst string) (release func(), err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closing {
		return nil, ErrClosed
	}
	if rt.cells[dst] != nil || rt.retiring[dst] != nil || rt.forking[dst] {
		return nil, &durability.ForkDestinationWrittenError{Cell: dst, What: "active on this node"}
	}
	if rt.forking == nil {
		rt.forking = map[string]bool{}
	}
	rt.forking[dst] = true
	return func() {
		rt.mu.Lock()
		delete(rt.forking, dst)
		rt.mu.Unlock()
	}, nil
}

// ForkTo copies this cell's state into the cell dst, which must never have
// been written (see Runtime.Fork): at bookmark, or, with "", at the state
// after this cell's latest commit. Like CurrentBookmark it first waits for
// every commit made before it to be durable, so called with the handler's
// context it ends the turn and the handler's writes are included. It
// returns the bookmark copied.
func (s *State) ForkTo(ctx context.Context, dst, bookmark string) (string, error) {
	if bookmark == "" {
		b, err := s.CurrentBookmark(ctx)
		if err != nil {
			return "", err
		}
		bookmark = b
	}
	return s.inst.rt.Fork(ctx, s.inst.key, dst, bookmark)
}
