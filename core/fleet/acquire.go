package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/store"
)

// OwnerNeedsRecoveryError: the cell's owner is dead, but its node log is
// still open and this node cannot recover it: it has no LogFolder, or the
// log is active (acknowledgements rode on celld followers), which only a
// celld node recovers. Nobody takes the cell until the log is sealed.
type OwnerNeedsRecoveryError struct {
	Cell, Owner string
	Active      bool
}

func (e *OwnerNeedsRecoveryError) Error() string {
	what := "node " + e.Owner
	if e.Cell != "" {
		what = "cell " + e.Cell + ": its dead owner " + e.Owner
	}
	if e.Active {
		return fmt.Sprintf("%s has a node log with follower acknowledgements (active) that a celld node must recover first", what)
	}
	return fmt.Sprintf("%s has a node log that must be recovered first", what)
}

// maxSteps bounds one TryAcquire: reads, races lost and ambiguous writes
// reconciled. celld reconciles an ambiguous claim at most 3 times.
const maxSteps = 12

// TryAcquire takes cell for this node under a new epoch, following celld's
// protocol (see DecideAcquire).
func (n *Node) TryAcquire(ctx context.Context, cell string) (lease.Grant, error) {
	if err := n.precheck(cell); err != nil {
		return nil, err
	}
	key := layout.OwnKey(cell)
	st := AcquireState{Self: n.opts.Node}
	reread := func() error {
		st = AcquireState{Self: n.opts.Node}
		obj, err := store.GetData(ctx, n.opts.Store, key)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := layout.DecodeOwnRecord(key, obj.Data)
		if err != nil {
			return err
		}
		st.Own, st.OwnVersion = &rec, obj.Version
		return nil
	}
	if err := reread(); err != nil {
		return nil, err
	}
	var found foundLog // what the listing found, for RecordLost
	reconciles := 0
	for step := 0; step < maxSteps; step++ {
		act := n.rules.acquire(st)
		switch act.Kind {
		case ListLTX:
			f, err := newestLog(ctx, n.opts.Store, cell)
			if err != nil {
				return nil, err
			}
			found = f
			st.LTXListed, st.NewestLTXEpoch, st.NewestLTXKey = true, f.Epoch, f.Key
		case ReadOwnerLease:
			// The lease is judged by the clock as it was before the read
			// was sent: the bucket answered later, so a lease expired by
			// then was expired when read. A clock read after the answer
			// (after a pause, say) would judge a lease its owner has
			// renewed since by an old copy, and steal a live owner's cell.
			st.OwnerLeaseRead = true
			st.NowMs = uint64(n.clock.Now().UnixMilli())
			obj, err := store.GetData(ctx, n.opts.Store, layout.NodeKey(st.Own.Node))
			switch {
			case store.IsNotFound(err):
			case err != nil:
				return nil, err
			default:
				nl, err := layout.DecodeNodeLease(layout.NodeKey(st.Own.Node), obj.Data)
				if err != nil {
					// An unreadable lease is not proof of death.
					return nil, err
				}
				st.OwnerLease = &nl
			}
		case OwnedElsewhere:
			class, id, _ := strings.Cut(cell, ":")
			oe := &lease.CellOwnedElsewhereError{Class: class, ID: id, Owner: act.Owner, Addr: act.Addr}
			if st.OwnerLease != nil {
				oe.Incarnation = st.OwnerLease.OwnershipIndexGeneration
			}
			return nil, oe
		case OwnerNeedsRecovery:
			// celld's takeover interlock: the dead owner's log is folded
			// into the cells' prefixes and sealed before any of its cells
			// is taken; then the take starts over from a fresh read.
			if err := n.recoverWaiting(ctx, act.Owner, "", n.opts.RecoveryWait); err != nil {
				var oe *OwnerNeedsRecoveryError
				if errors.As(err, &oe) {
					oe.Cell = cell
				}
				return nil, fmt.Errorf("take %s: %w", cell, err)
			}
			if err := reread(); err != nil {
				return nil, err
			}
		case RecordLost:
			err := &lease.RecordLostError{Scope: cell, Log: found.What, Newest: st.NewestLTXKey, Epoch: act.LostEpoch, RetryAfter: n.opts.LostRecordRefusal.Milliseconds()}
			n.mu.Lock()
			n.refused[cell] = refusal{until: n.clock.Now().Add(n.opts.LostRecordRefusal), err: err}
			n.mu.Unlock()
			n.log.Error("ownership record lost; refusing the cell", "cell", cell, "err", err)
			return nil, err
		case Create, Swap:
			if st.Own != nil && act.Record.Epoch > st.Own.Epoch+1 {
				n.log.Warn("ownership record is behind the cell's log; taking the epoch after the log's newest",
					"cell", cell, "record_epoch", st.Own.Epoch, "log_epoch", st.NewestLTXEpoch, "epoch", act.Record.Epoch)
			}
			v, err := n.opts.Store.Put(ctx, key, act.Record.Encode(), store.PutOptions{Condition: act.Cond})
			switch {
			case err == nil:
				return n.granted(cell, act.Record.Epoch, v)
			case store.IsPreconditionFailed(err):
				// Lost a race: decide again from what is there now.
				if err := reread(); err != nil {
					return nil, err
				}
			case store.IsAmbiguous(err):
				reconciles++
				if reconciles > 3 {
					return nil, fmt.Errorf("claim %s: still ambiguous after 3 reconciles: %w", key, err)
				}
				if err := reread(); err != nil {
					return nil, err
				}
				if Reconciled(act.Record, st.Own) {
					return n.granted(cell, act.Record.Epoch, st.OwnVersion)
				}
			default:
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("claim %s: gave up after %d steps of contention", key, maxSteps)
}

func (n *Node) precheck(cell string) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrNodeClosed
	}
	grants, err := n.liveLocked()
	if err != nil {
		n.mu.Unlock()
		breakGrants(grants)
		return &lease.LeaseLapsedError{Cell: cell}
	}
	defer n.mu.Unlock()
	if r, ok := n.refused[cell]; ok {
		if n.clock.Now().Before(r.until) {
			return r.err
		}
		delete(n.refused, cell)
	}
	return nil
}

// granted hands out the grant of a claim that was written, unless the node
// closed or fenced while it was being written (the claim took a pause, say):
// then no grant is given, since the lease may have lapsed before the claim
// was applied and another node may hold the cell under a later epoch.
func (n *Node) granted(cell string, epoch uint64, v store.Version) (lease.Grant, error) {
	g := &grant{node: n, cell: cell, epoch: epoch, version: v, lost: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrNodeClosed
	}
	if grants, err := n.liveLocked(); err != nil {
		n.mu.Unlock()
		breakGrants(grants)
		return nil, &lease.LeaseLapsedError{Cell: cell}
	}
	old := n.grants[cell]
	n.grants[cell] = g
	n.mu.Unlock()
	if old != nil {
		old.lose(fmt.Errorf("cell %s was taken again by this node under epoch %d", cell, epoch))
	}
	n.log.Debug("took cell", "cell", cell, "epoch", epoch)
	return g, nil
}

// grant is one acquisition.
type grant struct {
	node    *Node
	cell    string
	epoch   uint64
	version store.Version

	once sync.Once
	lost chan struct{}
	mu   sync.Mutex
	err  error
}

func (g *grant) Epoch() uint64         { return g.epoch }
func (g *grant) BucketWins() bool      { return true }
func (g *grant) Lost() <-chan struct{} { return g.lost }

func (g *grant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *grant) lose(err error) {
	g.once.Do(func() {
		g.mu.Lock()
		g.err = err
		g.mu.Unlock()
		close(g.lost)
	})
}

// CheckWrite refuses once the node lease could have lapsed (the latched
// self-fence). It reads nothing from the bucket.
func (g *grant) CheckWrite() error {
	if err := g.Err(); err != nil {
		if errors.Is(err, lease.ErrReleased) {
			return err
		}
		return &lease.LeaseLapsedError{Cell: g.cell}
	}
	if err := g.node.writable(g.cell); err != nil {
		g.lose(err)
		return err
	}
	return nil
}

// CheckAck is celld's acknowledgement rule, the last check before a durable
// write is acknowledged: CheckWrite, then a fresh read of own.json, which
// must still name this node at this grant's epoch. A record that names
// another node or another epoch, was released, is missing or does not
// decode loses the grant. A read that fails refuses the acknowledgement
// ("cannot confirm ownership before acknowledging") but keeps the grant.
func (g *grant) CheckAck(ctx context.Context) error {
	if err := g.CheckWrite(); err != nil {
		return err
	}
	n := g.node
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.opts.TTL/3)
	defer cancel()
	key := layout.OwnKey(g.cell)
	obj, err := store.GetData(ctx, n.opts.Store, key)
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("%s: cannot confirm ownership before acknowledging: %w", g.cell, err)
	}
	if err == nil {
		rec, derr := layout.DecodeOwnRecord(key, obj.Data)
		if derr == nil && rec.Node == n.opts.Node && rec.Epoch == g.epoch {
			return nil
		}
	}
	lerr := &lease.LeaseLapsedError{Cell: g.cell}
	g.lose(lerr)
	return lerr
}

// Release writes {"node":"","epoch":N} if the record is still ours, so the
// next node takes the cell at once. A record that moved on is left alone.
func (g *grant) Release(ctx context.Context) error {
	n := g.node
	n.mu.Lock()
	if n.grants[g.cell] == g {
		delete(n.grants, g.cell)
	}
	n.mu.Unlock()
	defer g.lose(lease.ErrReleased)
	if g.Err() != nil {
		return nil // already lost: not ours to release
	}
	key := layout.OwnKey(g.cell)
	for attempt := 0; attempt < 3; attempt++ {
		obj, err := store.GetData(ctx, n.opts.Store, key)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := layout.DecodeOwnRecord(key, obj.Data)
		if err != nil {
			return err
		}
		if !MayRelease(n.opts.Node, g.epoch, &rec) {
			return nil
		}
		released := layout.OwnRecord{Node: "", Epoch: g.epoch}
		_, err = n.opts.Store.Put(ctx, key, released.Encode(), store.PutOptions{Condition: store.IfVersion(obj.Version)})
		if err == nil || store.IsPreconditionFailed(err) {
			return nil // a 412 is benign: the record moved on
		}
		if !store.IsAmbiguous(err) {
			return err
		}
		// Ambiguous: the next read tells whether it applied.
	}
	return fmt.Errorf("release %s: outcome still unknown", key)
}
