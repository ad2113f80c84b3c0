package fleet

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// recoverPrevious recovers the node log of the previous session of this
// node id before a new session installs its lease over it (celld's
// recovery-before-install): it waits, at most RecoveryWait, for that
// session's lease to expire (its process may still be running), then
// recovers its log (waiting for another node's recovery of it at most
// RecoveryWait plus RecoveryClaimTTL).
func (n *Node) recoverPrevious(ctx context.Context, old layout.NodeLease) error {
	if n.opts.Folder == nil {
		return errors.New("this node recovers no node log (no LogFolder)")
	}
	deadline := n.clock.Now().Add(max(n.opts.RecoveryWait, 0))
	for {
		nowMs := uint64(n.clock.Now().UnixMilli())
		if !old.Live(nowMs) {
			break
		}
		if !n.clock.Now().Before(deadline) {
			return &NodeLiveError{Node: n.opts.Node}
		}
		wait := min(time.Duration(old.ExpiresMs-nowMs)*time.Millisecond+10*time.Millisecond, n.opts.TTL/3)
		t := n.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		cur, _, err := ReadNodeLease(ctx, n.opts.Store, n.opts.Node)
		if err != nil {
			return err
		}
		if cur == nil || cur.OwnershipIndexGeneration != old.OwnershipIndexGeneration || !cur.Log.NeedsRecovery() {
			return nil // gone, replaced, or recovered meanwhile: install looks again
		}
		old = *cur
	}
	n.log.Warn("recovering this node id's previous session's log before installing the lease", "generation", old.OwnershipIndexGeneration)
	return n.recoverWaiting(ctx, n.opts.Node, old.OwnershipIndexGeneration, n.opts.RecoveryWait+RecoveryClaimTTL)
}

// recoverWaiting is recoverLog that, while another node holds a fresh
// claim on the log, waits for it to finish (looking again every TTL/3, at
// most patience in all), as celld's takers retry a recovering owner.
func (n *Node) recoverWaiting(ctx context.Context, node, gen string, patience time.Duration) error {
	if n.opts.RecoveryWait < 0 {
		patience = 0
	}
	deadline := n.clock.Now().Add(patience)
	for {
		err := n.recoverLog(ctx, node, gen)
		var claimed *RecoveryClaimedError
		if !errors.As(err, &claimed) || !n.clock.Now().Before(deadline) {
			return err
		}
		t := n.clock.NewTimer(max(n.opts.TTL/3, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// sweepLoop sweeps every SweepInterval until the node closes or fences.
func (n *Node) sweepLoop(sh *shell) {
	defer close(sh.done)
	for {
		t := n.clock.NewTimer(n.opts.SweepInterval)
		select {
		case <-sh.stop:
			t.Stop()
			return
		case <-t.C():
		}
		if n.isFenced() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.opts.SweepInterval)
		if err := n.Sweep(ctx); err != nil {
			n.log.Warn("node log sweep incomplete", "err", err)
		}
		cancel()
	}
}

// Sweep is celld's maintenance sweep of node logs: it recovers the open,
// bucket-recoverable log of every other node whose lease has expired, so
// a dead node's bundled rows reach their cells' prefixes even when no
// call takes its cells; and it deletes the bundles of sessions that need
// them no more: a session whose record is gone, sealed, or replaced by a
// later session of the same node id (recovered before it was installed).
// A session's record is read after its bundles are listed: a session
// writes its record before any bundle, so a live session's bundles are
// never taken for a dead one's.
func (n *Node) Sweep(ctx context.Context) error {
	var errs []error
	err := store.ListEach(ctx, n.opts.Store, store.ListOptions{Prefix: layout.NodesPrefix}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			node, ok := layout.NodeOfKey(o.Key)
			if !ok || node == n.opts.Node || layout.NodeKey(node) != o.Key {
				continue
			}
			nowMs := uint64(n.clock.Now().UnixMilli())
			lease, _, err := ReadNodeLease(ctx, n.opts.Store, node)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if lease == nil || lease.Live(nowMs) || !lease.Log.NeedsRecovery() || !lease.Log.BucketRecoverable() {
				continue
			}
			if err := n.recoverLog(ctx, node, lease.OwnershipIndexGeneration); err != nil {
				var claimed *RecoveryClaimedError
				if !errors.As(err, &claimed) {
					errs = append(errs, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if err := n.sweepSessions(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sweepSessions deletes the objects of every session under log/ whose
// record no longer needs them (see Sweep).
func (n *Node) sweepSessions(ctx context.Context) error {
	nodes, err := store.ListAll(ctx, n.opts.Store, store.ListOptions{Prefix: layout.NodeLogPrefix, Delimiter: "/"})
	if err != nil {
		return err
	}
	var errs []error
	for _, np := range nodes.Prefixes {
		node := strings.TrimSuffix(strings.TrimPrefix(np, layout.NodeLogPrefix), "/")
		sessions, err := store.ListAll(ctx, n.opts.Store, store.ListOptions{Prefix: np, Delimiter: "/"})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(sessions.Prefixes) == 0 {
			continue
		}
		lease, _, err := ReadNodeLease(ctx, n.opts.Store, node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, sp := range sessions.Prefixes {
			gen := strings.TrimSuffix(strings.TrimPrefix(sp, np), "/")
			if lease != nil && lease.OwnershipIndexGeneration == gen && (lease.Log == nil || lease.Log.State != layout.NodeLogSealed) {
				continue // the record's own session: live, or still to recover
			}
			if node == n.opts.Node && gen == n.pubkey {
				continue
			}
			n.discardSession(ctx, node, gen)
		}
	}
	return errors.Join(errs...)
}
