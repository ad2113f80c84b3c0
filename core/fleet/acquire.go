package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// OwnerNeedsRecoveryError: the cell's owner is dead, but its celld node log
// is still open; a celld node must recover it before anyone takes the cell.
type OwnerNeedsRecoveryError struct {
	Cell, Owner string
}

func (e *OwnerNeedsRecoveryError) Error() string {
	return fmt.Sprintf("cell %s: its dead owner %s has a node log that celld must recover first", e.Cell, e.Owner)
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
	key := OwnKey(cell)
	st := AcquireState{Self: n.opts.Node}
	reread := func() error {
		st = AcquireState{Self: n.opts.Node}
		obj, err := n.opts.Store.Get(ctx, key)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := DecodeOwnRecord(key, obj.Data)
		if err != nil {
			return err
		}
		st.Own, st.OwnVersion = &rec, obj.Version
		return nil
	}
	if err := reread(); err != nil {
		return nil, err
	}
	reconciles := 0
	for step := 0; step < maxSteps; step++ {
		st.NowMs = uint64(n.clock.Now().UnixMilli())
		decide := DecideAcquire
		if n.sim.decide != nil {
			decide = n.sim.decide
		}
		act := decide(st)
		switch act.Kind {
		case ListLTX:
			epoch, newest, err := newestLTX(ctx, n.opts.Store, cell)
			if err != nil {
				return nil, err
			}
			st.LTXListed, st.NewestLTXEpoch, st.NewestLTXKey = true, epoch, newest
		case ReadOwnerLease:
			st.OwnerLeaseRead = true
			obj, err := n.opts.Store.Get(ctx, NodeKey(st.Own.Node))
			switch {
			case store.IsNotFound(err):
			case err != nil:
				return nil, err
			default:
				nl, err := DecodeNodeLease(NodeKey(st.Own.Node), obj.Data)
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
			return nil, &OwnerNeedsRecoveryError{Cell: cell, Owner: act.Owner}
		case RecordLost:
			err := &lease.RecordLostError{Scope: cell, NewestLTX: st.NewestLTXKey, Epoch: act.LostEpoch, RetryAfter: n.opts.LostRecordRefusal.Milliseconds()}
			n.mu.Lock()
			n.refused[cell] = refusal{until: n.clock.Now().Add(n.opts.LostRecordRefusal), err: err}
			n.mu.Unlock()
			n.log.Error("ownership record lost; refusing the cell", "cell", cell, "err", err)
			return nil, err
		case Create, Swap:
			v, err := n.opts.Store.Put(ctx, key, act.Record.Encode(), store.PutOptions{Condition: act.Cond})
			switch {
			case err == nil:
				return n.granted(cell, act.Record.Epoch, v, act.Fresh), nil
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
					return n.granted(cell, act.Record.Epoch, st.OwnVersion, act.Fresh), nil
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
	defer n.mu.Unlock()
	if n.closed {
		return ErrNodeClosed
	}
	if n.fenced != nil || !n.clock.Now().Before(n.deadline) {
		return &lease.LeaseLapsedError{Cell: cell}
	}
	if r, ok := n.refused[cell]; ok {
		if n.clock.Now().Before(r.until) {
			return r.err
		}
		delete(n.refused, cell)
	}
	return nil
}

// newestLTX finds the newest epoch holding LTX for the cell (0 if none) and
// one key in it, for the lost-record message.
func newestLTX(ctx context.Context, s store.Store, cell string) (uint64, string, error) {
	prefix := ltx.CellPrefix(cell)
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: prefix, Delimiter: "/"})
	if err != nil {
		return 0, "", err
	}
	var best uint64
	for _, p := range page.Prefixes {
		if e, ok := ltx.ParseEpochDir(strings.TrimPrefix(p, prefix)); ok && e > best {
			best = e
		}
	}
	if best == 0 {
		return 0, "", nil
	}
	files, err := s.List(ctx, store.ListOptions{Prefix: ltx.EpochPrefix(cell, best), Limit: 1})
	if err != nil {
		return 0, "", err
	}
	key := ltx.EpochPrefix(cell, best)
	if len(files.Objects) > 0 {
		key = files.Objects[0].Key
	}
	return best, key, nil
}

func (n *Node) granted(cell string, epoch uint64, v store.Version, fresh bool) *grant {
	g := &grant{node: n, cell: cell, epoch: epoch, version: v, fresh: fresh, lost: make(chan struct{})}
	n.mu.Lock()
	old := n.grants[cell]
	n.grants[cell] = g
	n.mu.Unlock()
	if old != nil {
		old.lose(fmt.Errorf("cell %s was taken again by this node under epoch %d", cell, epoch))
	}
	n.log.Debug("took cell", "cell", cell, "epoch", epoch, "fresh", fresh)
	return g
}

// grant is one acquisition.
type grant struct {
	node    *Node
	cell    string
	epoch   uint64
	version store.Version
	fresh   bool

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

// CheckWrite refuses once the node lease could have lapsed (self-fencing),
// and, with VerifyOwnerOnAck, unless own.json still names this node and
// epoch.
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
	if g.node.opts.VerifyOwnerOnAck {
		ctx, cancel := context.WithTimeout(context.Background(), g.node.opts.TTL/3)
		defer cancel()
		obj, err := g.node.opts.Store.Get(ctx, OwnKey(g.cell))
		if err != nil {
			return fmt.Errorf("%s: cannot confirm ownership before acknowledging: %w", g.cell, err)
		}
		rec, err := DecodeOwnRecord(OwnKey(g.cell), obj.Data)
		if err != nil || rec.Node != g.node.opts.Node || rec.Epoch != g.epoch {
			lerr := &lease.LeaseLapsedError{Cell: g.cell}
			g.lose(lerr)
			return lerr
		}
	}
	return nil
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
	key := OwnKey(g.cell)
	for attempt := 0; attempt < 3; attempt++ {
		obj, err := n.opts.Store.Get(ctx, key)
		if store.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := DecodeOwnRecord(key, obj.Data)
		if err != nil {
			return err
		}
		if !MayRelease(n.opts.Node, g.epoch, &rec) {
			return nil
		}
		released := OwnRecord{Node: "", Epoch: g.epoch}
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
