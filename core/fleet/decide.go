package fleet

import (
	"time"

	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// ActionKind is what the acquisition protocol does next.
type ActionKind int

const (
	// ReadOwnerLease: the record names another node; read its lease.
	ReadOwnerLease ActionKind = iota + 1
	// ListLTX: list the cell's logs (LTX, changeset, backups) for their
	// newest epoch, before creating a record (is the record lost?) or
	// raising its epoch (is it behind the log?).
	ListLTX
	// Create: write Record create-only (first activation; start empty).
	Create
	// Swap: compare-and-swap Record over the version read (raise the
	// epoch; restore from the bucket).
	Swap
	// OwnedElsewhere: another node's live lease holds the cell.
	OwnedElsewhere
	// OwnerNeedsRecovery: the owner is dead but its node log must be
	// recovered by celld before anyone may take its cells.
	OwnerNeedsRecovery
	// RecordLost: own.json is missing next to an existing log; refuse.
	RecordLost
)

func (k ActionKind) String() string {
	return [...]string{"?", "read-owner-lease", "list-ltx", "create", "swap", "owned-elsewhere", "owner-needs-recovery", "record-lost"}[k]
}

// AcquireState is what a node has read so far while taking a cell.
type AcquireState struct {
	Self string
	// NowMs is the reader's wall clock, as celld compares expires_ms, read
	// just before OwnerLease was read (never after the answer: a lease read
	// before a pause must not be judged by the clock after it).
	NowMs uint64

	// Own is the ownership record, nil when the key is absent.
	Own        *layout.OwnRecord
	OwnVersion store.Version

	// OwnerLease is the lease of Own.Node when OwnerLeaseRead; nil when that
	// key is absent.
	OwnerLeaseRead bool
	OwnerLease     *layout.NodeLease

	// LTXListed is set once the cell's logs were listed (before any Create
	// or Swap): LTX, changeset and backups alike, despite the names.
	// NewestLTXEpoch is the newest epoch any of them holds, 0 when none.
	LTXListed      bool
	NewestLTXEpoch uint64
	NewestLTXKey   string
}

// Action is the protocol's next step.
type Action struct {
	Kind ActionKind
	// Record and Cond are the write for Create and Swap.
	Record layout.OwnRecord
	Cond   store.Condition
	// Owner and Addr name the live owner for OwnedElsewhere.
	Owner, Addr string
	// LostEpoch is the newest LTX epoch for RecordLost.
	LostEpoch uint64
}

// DecideAcquire is the pure core of taking a cell: given what has been read,
// it returns the next step. Every activation takes a new epoch, and never
// one that already holds files, so an epoch has exactly one writer:
//
//   - no record and no log: create {self, 1} create-only;
//   - no record but a log (LTX, changeset, backups) exists: the record was
//     lost — refuse, never guess;
//   - record names self or nobody: swap to {self, E+1};
//   - record names another node: read its lease; live → owned elsewhere;
//     missing or expired → swap to {self, E+1} (after celld has
//     recovered its node log, if it has one open);
//
// where E is the larger of the record's epoch and the newest epoch of the
// cell's log. A record behind the log (a mistyped repair, a record restored
// from an old copy of the bucket) would otherwise raise the epoch into one
// that holds another owner's files; the take moves past the newest epoch
// instead, the state celld reaches too by refusing each epoch not above
// the log's newest.
func DecideAcquire(s AcquireState) Action {
	if s.Own == nil {
		if !s.LTXListed {
			return Action{Kind: ListLTX}
		}
		if s.NewestLTXEpoch > 0 || s.NewestLTXKey != "" {
			return Action{Kind: RecordLost, LostEpoch: s.NewestLTXEpoch}
		}
		return Action{Kind: Create, Record: layout.OwnRecord{Node: s.Self, Epoch: 1}, Cond: store.IfAbsent}
	}
	if s.Own.Node != s.Self && s.Own.Node != "" {
		if !s.OwnerLeaseRead {
			return Action{Kind: ReadOwnerLease}
		}
		if s.OwnerLease != nil && s.OwnerLease.Live(s.NowMs) {
			return Action{Kind: OwnedElsewhere, Owner: s.Own.Node, Addr: s.OwnerLease.Addr}
		}
		if s.OwnerLease != nil && s.OwnerLease.Log.NeedsRecovery() {
			return Action{Kind: OwnerNeedsRecovery, Owner: s.Own.Node}
		}
	}
	if !s.LTXListed {
		return Action{Kind: ListLTX}
	}
	next := layout.OwnRecord{Node: s.Self, Epoch: max(s.Own.Epoch, s.NewestLTXEpoch) + 1}
	return Action{Kind: Swap, Record: next, Cond: store.IfVersion(s.OwnVersion)}
}

// Reconciled reports whether an ambiguous Create or Swap of want in fact
// applied, judged from a fresh read of the record (nil when absent).
func Reconciled(want layout.OwnRecord, read *layout.OwnRecord) bool {
	return read != nil && *read == want
}

// MayRelease reports whether a node holding epoch may write the
// released record over what it read: only its own record at its own epoch.
func MayRelease(self string, epoch uint64, read *layout.OwnRecord) bool {
	return read != nil && read.Node == self && read.Epoch == epoch
}

// FenceDeadline is the monotonic instant after which a node must stop
// acknowledging writes: the expiry it published (computed at sentAt, before
// the renewal was sent, so the bucket's copy can only expire later) minus a
// safety margin for clock drift between nodes.
func FenceDeadline(sentAt time.Time, ttl, margin time.Duration) time.Time {
	return sentAt.Add(ttl - margin)
}

// WithinDeadline reports whether a node whose fence deadline is deadline
// may still take cells and acknowledge writes at now, by its own monotonic
// clock: only strictly before the deadline. At or past it the node fences
// for good, and a renewal that completes then fences too (the lease may
// have lapsed in between).
func WithinDeadline(now, deadline time.Time) bool {
	return now.Before(deadline)
}

// RenewInterval is how often a node renews its lease: every TTL/3, at
// least 1 ms, as celld does.
func RenewInterval(ttl time.Duration) time.Duration {
	return max(ttl/3, time.Millisecond)
}

// Recovery of a dead session's node log (celld-node-log.md §7.2, §9).
const (
	// RecoveryHeartbeat is how often a recoverer renews its claim on a
	// record it is recovering (celld's RECOVERY_HEARTBEAT).
	RecoveryHeartbeat = 5 * time.Second
	// RecoveryClaimTTL is how long a claim lasts without a heartbeat
	// before another recoverer may take it over (RECOVERY_CLAIM_TTL).
	RecoveryClaimTTL = 30 * time.Second
)

// RecoverKind is a recoverer's next step.
type RecoverKind int

const (
	// RecoverDone: nothing to recover (no record, another session's
	// record, no log, a sealed log).
	RecoverDone RecoverKind = iota + 1
	// RecoverLive: the session's lease is live; it is not dead.
	RecoverLive
	// RecoverNeedsCelld: the log may have acknowledgements that rode on
	// followers (active): only a celld node can recover it.
	RecoverNeedsCelld
	// RecoverFence: compare-and-swap the open record to recovering,
	// claimed by this node.
	RecoverFence
	// RecoverTakeOver: the claim went stale; claim it for this node.
	RecoverTakeOver
	// RecoverWait: another node holds a fresh claim.
	RecoverWait
	// RecoverFold: this node holds the claim: fold, then seal.
	RecoverFold
)

func (k RecoverKind) String() string {
	return [...]string{"?", "done", "live", "needs-celld", "fence", "take-over", "wait", "fold"}[k]
}

// RecoverState is what a recoverer has read of a session's record.
type RecoverState struct {
	Self string
	// NowMs is the recoverer's wall clock read before the record was.
	NowMs uint64
	// Lease is the node's record (nil: absent).
	Lease *layout.NodeLease
	// Generation pins the session being recovered; "" takes the record's.
	Generation string
}

// DecideRecover is the pure core of recovering a dead session's node log:
// absence, another generation, no log or a sealed one means done; a live
// lease is refused; a log with fleet acknowledgements needs celld; an open
// log is fenced by this node's claim; a recovering one is folded if the
// claim is this node's, taken over if the claim is older than
// RecoveryClaimTTL (or has no claim fields, an older celld), and waited
// for otherwise.
func DecideRecover(s RecoverState) RecoverKind {
	l := s.Lease
	if l == nil || (s.Generation != "" && l.OwnershipIndexGeneration != s.Generation) || !l.Log.NeedsRecovery() {
		return RecoverDone
	}
	if l.Live(s.NowMs) {
		return RecoverLive
	}
	if !l.Log.BucketRecoverable() {
		return RecoverNeedsCelld
	}
	if l.Log.State == layout.NodeLogOpen {
		return RecoverFence
	}
	c := l.Log
	switch {
	case c.Claimant != nil && *c.Claimant == s.Self:
		return RecoverFold
	case c.Claimant == nil || c.ClaimedMs == nil:
		return RecoverTakeOver
	case s.NowMs >= *c.ClaimedMs && s.NowMs-*c.ClaimedMs >= uint64(RecoveryClaimTTL.Milliseconds()):
		return RecoverTakeOver
	}
	return RecoverWait
}

// Claimed is l with the log recovering under self's claim at nowMs; every
// other field is kept, expires_ms included (a recoverer never extends a
// dead lease).
func Claimed(l layout.NodeLease, self string, nowMs uint64) layout.NodeLease {
	lg := *l.Log
	lg.State = layout.NodeLogRecovering
	lg.Claimant, lg.ClaimedMs = &self, &nowMs
	l.Log = &lg
	return l
}

// Sealed is l with its log sealed and the claim fields cleared; tiered and
// active are kept.
func Sealed(l layout.NodeLease) layout.NodeLease {
	lg := *l.Log
	lg.State = layout.NodeLogSealed
	lg.Claimant, lg.ClaimedMs = nil, nil
	l.Log = &lg
	return l
}
