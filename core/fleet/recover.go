package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// LogFolder folds a dead session's node log into the cells' own prefixes
// (core/nodelog's Fold; core/host wires it): recovery calls it between
// fencing the session's record and sealing it. It must write every row a
// cell's prefix lacks while the cell's record still names the session's
// node at the row's epoch.
type LogFolder interface {
	FoldLog(ctx context.Context, node, generation string) error
}

// RecoveryClaimedError: another node is recovering the session's log (its
// claim is fresh); try again shortly.
type RecoveryClaimedError struct {
	Node, Claimant string
}

func (e *RecoveryClaimedError) Error() string {
	return fmt.Sprintf("the node log of %s is being recovered by %s; retry shortly", e.Node, e.Claimant)
}

// NodeLiveError: the session whose log was to be recovered holds a live
// lease: it is not dead.
type NodeLiveError struct{ Node string }

func (e *NodeLiveError) Error() string {
	return fmt.Sprintf("node %s holds a live lease; its node log is not recovered", e.Node)
}

// recoverLog recovers the node log of node's session generation (the
// record's current one when generation is ""), as celld-node-log.md §7.2
// and §9 say a node without followers may: fence the record by
// compare-and-swap (open to recovering, claimed by this node), fold every
// retained bundle into the cells' prefixes while renewing the claim every
// RecoveryHeartbeat, then seal the record, and delete the session's
// bundles. nil means the record needs nothing more (sealed, absent, or
// another session). Recoveries of one node run one at a time on this node.
func (n *Node) recoverLog(ctx context.Context, node, generation string) error {
	if n.opts.Folder == nil {
		return &OwnerNeedsRecoveryError{Owner: node}
	}
	mu := n.recoveryLock(node)
	mu.Lock()
	defer mu.Unlock()
	s := n.opts.Store
	key := layout.NodeKey(node)
	for pass := 0; pass < 5; pass++ {
		nowMs := uint64(n.clock.Now().UnixMilli())
		lease, v, err := ReadNodeLease(ctx, s, node)
		if err != nil {
			return err
		}
		act := DecideRecover(RecoverState{Self: n.opts.Node, NowMs: nowMs, Lease: lease, Generation: generation})
		switch act {
		case RecoverDone:
			return nil
		case RecoverLive:
			return &NodeLiveError{Node: node}
		case RecoverNeedsCelld:
			return &OwnerNeedsRecoveryError{Owner: node, Active: true}
		case RecoverWait:
			return &RecoveryClaimedError{Node: node, Claimant: *lease.Log.Claimant}
		case RecoverFence, RecoverTakeOver:
			claimed := Claimed(*lease, n.opts.Node, uint64(n.clock.Now().UnixMilli()))
			nv, err := s.Put(ctx, key, claimed.Encode(), store.PutOptions{Condition: store.IfVersion(v)})
			if err != nil {
				if store.IsPreconditionFailed(err) || store.IsAmbiguous(err) {
					continue // read again: a race lost, or our claim applied
				}
				return fmt.Errorf("claim %s for recovery: %w", key, err)
			}
			n.log.Warn("recovering a dead node's log", "dead", node, "generation", lease.OwnershipIndexGeneration, "step", act.String())
			lease, v = &claimed, nv
		}
		gen := lease.OwnershipIndexGeneration
		if err := n.foldClaimed(ctx, node, gen, key, lease, v); err != nil {
			return err
		}
		if err := n.seal(ctx, node, gen); err != nil {
			return err
		}
		n.log.Warn("recovered a dead node's log", "dead", node, "generation", gen)
		n.discardSession(ctx, node, gen)
		return nil
	}
	return fmt.Errorf("recover the node log of %s: its record kept changing", node)
}

// recoveryLock is the lock that runs one recovery of node at a time.
func (n *Node) recoveryLock(node string) *sync.Mutex {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.recovering == nil {
		n.recovering = map[string]*sync.Mutex{}
	}
	mu := n.recovering[node]
	if mu == nil {
		mu = &sync.Mutex{}
		n.recovering[node] = mu
	}
	return mu
}

// foldClaimed folds the session while renewing this node's claim every
// RecoveryHeartbeat; a heartbeat that finds the record changed (another
// recoverer took the claim over) stops the fold.
func (n *Node) foldClaimed(ctx context.Context, node, gen, key string, lease *layout.NodeLease, v store.Version) error {
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		cur, ver := *lease, v
		for {
			t := n.clock.NewTimer(RecoveryHeartbeat)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C():
			}
			next := Claimed(cur, n.opts.Node, uint64(n.clock.Now().UnixMilli()))
			nv, err := n.opts.Store.Put(fctx, key, next.Encode(), store.PutOptions{Condition: store.IfVersion(ver)})
			switch {
			case err == nil:
				cur, ver = next, nv
			case store.IsPreconditionFailed(err):
				cancel(fmt.Errorf("the recovery claim on %s was taken over", key))
				return
			default:
				n.log.Warn("recovery heartbeat failed; retrying", "dead", node, "err", err)
			}
		}
	}()
	err := n.opts.Folder.FoldLog(fctx, node, gen)
	close(stop)
	<-beat
	if cause := context.Cause(fctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// seal writes the sealed record, if the record is still recovering under
// this node's claim (at most 3 tries).
func (n *Node) seal(ctx context.Context, node, gen string) error {
	key := layout.NodeKey(node)
	for attempt := 0; attempt < 3; attempt++ {
		lease, v, err := ReadNodeLease(ctx, n.opts.Store, node)
		if err != nil {
			return err
		}
		switch {
		case lease == nil || lease.OwnershipIndexGeneration != gen || lease.Log == nil || lease.Log.State == layout.NodeLogSealed:
			return nil
		case lease.Log.State != layout.NodeLogRecovering || lease.Log.Claimant == nil || *lease.Log.Claimant != n.opts.Node:
			return &RecoveryClaimedError{Node: node, Claimant: claimantOf(lease.Log)}
		}
		sealed := Sealed(*lease)
		_, err = n.opts.Store.Put(ctx, key, sealed.Encode(), store.PutOptions{Condition: store.IfVersion(v)})
		if err == nil {
			return nil
		}
		if !store.IsPreconditionFailed(err) && !store.IsAmbiguous(err) {
			return fmt.Errorf("seal %s: %w", key, err)
		}
	}
	return fmt.Errorf("seal %s: the record kept changing", key)
}

func claimantOf(l *layout.NodeLog) string {
	if l == nil || l.Claimant == nil {
		return ""
	}
	return *l.Claimant
}

// discardSession deletes a sealed session's bundles (best effort: the
// sweep deletes what is left).
func (n *Node) discardSession(ctx context.Context, node, gen string) {
	prefix := layout.SessionPrefix(node, gen)
	err := store.ListEach(ctx, n.opts.Store, store.ListOptions{Prefix: prefix}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if err := n.opts.Store.Delete(ctx, o.Key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		n.log.Warn("could not delete a recovered session's bundles; the sweep will", "dead", node, "generation", gen, "err", err)
	}
}
