package shard

import (
	"context"
	"errors"
	"fmt"
	"github.com/cellb/cellb/core/internal/flock"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellb/cellb/core/lease"
)

// Option configures Open.
type Option func(*options)

type options struct {
	logger *slog.Logger
	addr   string
}

// WithLogger sets where the lease logs taking and letting go of shards
// (debug level) and failures to let go (warn level). Silent by default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithAddr sets the local address this process serves routed calls on
// ("unix:<socket path>"). While it holds a shard it records the address in
// holder-<i>.json, and TryAcquire in another process reports it as the
// owner's Addr, so that process can route the call here (Router).
func WithAddr(addr string) Option {
	return func(o *options) { o.addr = addr }
}

// A holder records itself just after it takes a shard's lock and clears
// its record just before it lets go; TryAcquire, finding the lock held and
// no record, looks again this often, this many times (see TryAcquire).
const (
	holderSettleStep  = time.Millisecond
	holderSettleTries = 50
)

// Lease grants cells to this process by locking their shards. It implements
// lease.Lease. Close it to let every shard go.
type Lease struct {
	dir    string
	n      int
	addr   string // see WithAddr; "" records no holder
	log    *slog.Logger
	closed atomic.Bool
	shards []shardState

	// Set by Watch: learn runs on every takeover, under watchCtx, which
	// Close cancels before it waits for the watching to end (watchDone).
	learn       atomic.Pointer[LearnFunc]
	watchMu     sync.Mutex
	watchCtx    context.Context
	watchCancel context.CancelFunc
	watchDone   chan struct{}
}

// shardState is this Lease's view of one shard. mu serialises everything
// about the shard, including the synced epoch write.
type shardState struct {
	mu    sync.Mutex
	f     *os.File // the shard file, open and locked while held
	epoch uint64   // last epoch granted while held
	// recorded is the epoch the shard file holds: grants above it have
	// stored nothing yet (see RecordEpoch).
	recorded uint64
	grants   map[string]*grant // live grants by cell key
	// known: this Lease knows what the shard's cells stored as of epoch
	// knownEpoch — it held the shard up to that epoch, having learned it
	// when it took the shard (learned). No cell's storage changes without
	// a grant, and every grant raises the epoch, so while the shard file
	// still says knownEpoch nothing changed since.
	known      bool
	knownEpoch uint64
	learned    bool
}

var _ lease.Lease = (*Lease)(nil)

// Open prepares dir for n shards (creating it, its shard files and
// shards.json on first use) and returns a Lease that holds no shard yet.
// Every process sharing dir must use the same n; Open fails with
// *CountMismatchError otherwise.
func Open(dir string, n int, opts ...Option) (*Lease, error) {
	if !flock.Supported {
		return nil, ErrUnsupported
	}
	if n < 1 || n > MaxShards {
		return nil, fmt.Errorf("shard: count %d out of range [1, %d]", n, MaxShards)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := prepare(dir, n); err != nil {
		return nil, err
	}
	return &Lease{dir: dir, n: n, addr: o.addr, log: o.logger.With("shard_dir", dir), shards: make([]shardState, n)}, nil
}

// Dir is the shard directory.
func (l *Lease) Dir() string { return l.dir }

// Shards is the shard count.
func (l *Lease) Shards() int { return l.n }

// TryAcquire grants cellKey under the next epoch of its shard. If this
// Lease already holds the shard it only records the epoch; otherwise it
// tries the shard's lock without waiting, and fails with
// *lease.CellOwnedElsewhereError when another process (or another Lease on
// the same directory) holds it. A Lease that routes (WithAddr) and finds
// the lock held but no holder record looks again for up to 50 ms: the
// holder is taking the shard or letting it go. Taking a cell this Lease
// already granted ends the earlier grant, as a new activation supersedes
// an old one.
func (l *Lease) TryAcquire(ctx context.Context, cellKey string) (lease.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cellKey == "" {
		return nil, errors.New("shard: empty cell key")
	}
	i := Of(cellKey, l.n)
	s := &l.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if s.f == nil {
		held, err := l.lockLocked(i, s)
		if err != nil {
			return nil, err
		}
		h, recorded := Holder{}, false
		if !held {
			h, recorded = readHolder(l.dir, i)
		}
		// No record while another holds the lock: a holder that routes is
		// between taking the lock and recording itself, or between
		// clearing its record and letting go. Look again for a moment,
		// so a restart is not answered "owned by another node" (a process
		// that routes calls itself expects its neighbours to).
		for try := 0; !held && !recorded && l.addr != "" && try < holderSettleTries; try++ {
			time.Sleep(holderSettleStep)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if held, err = l.lockLocked(i, s); err != nil {
				return nil, err
			}
			if !held {
				h, recorded = readHolder(l.dir, i)
			}
		}
		if !held {
			class, id, _ := strings.Cut(cellKey, ":")
			oe := &lease.CellOwnedElsewhereError{Class: class, ID: id}
			// A record naming this process is not offered as a route
			// (it would route to itself), unless this Lease routes and
			// the record names another socket: another Lease in this
			// process (two hosts on one directory, as tests run them).
			if recorded && (h.PID != os.Getpid() || (l.addr != "" && h.Addr != l.addr)) {
				oe.Owner, oe.Addr = h.String(), h.Addr
			}
			return nil, oe
		}
	}
	// The epoch is handed out now and written (synced) only when the
	// grant first writes (RecordEpoch): a grant that only reads stores
	// nothing under it.
	epoch := s.epoch + 1
	s.epoch = epoch
	g := &grant{l: l, shard: i, cell: cellKey, epoch: epoch, lost: make(chan struct{})}
	old := s.grants[cellKey]
	s.grants[cellKey] = g
	if old != nil {
		old.lose(fmt.Errorf("cell %s was taken again by this process under epoch %d", cellKey, epoch))
	}
	return g, nil
}

// lockLocked opens shard i's file and tries its lock. The file must exist:
// shards.json promises it does, and a lock on a recreated file would not
// exclude a process still holding the deleted one.
func (l *Lease) lockLocked(i int, s *shardState) (bool, error) {
	path := lockPath(l.dir, i)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, &DamagedError{Path: path, Reason: "missing; a shard file must never be deleted while the directory is in use"}
	}
	if err != nil {
		return false, err
	}
	held, err := flock.TryLock(f)
	if err != nil || !held {
		f.Close()
		return false, err
	}
	epoch, err := readEpoch(f)
	if err != nil {
		f.Close() // closing drops the lock
		return false, err
	}
	// Epochs this Lease granted but never recorded (grants that stored
	// nothing) are not handed out again: within a process they only grow.
	s.f, s.epoch, s.recorded, s.grants = f, max(s.epoch, epoch), epoch, make(map[string]*grant)
	if l.addr != "" {
		if err := writeHolder(l.dir, i, Holder{PID: os.Getpid(), Addr: l.addr}); err != nil {
			// Routing is a convenience: without the record, other
			// processes answer 409 for this shard instead of routing.
			l.log.Warn("recording this process as the shard's holder", "shard", i, "err", err)
		}
	}
	l.log.Debug("took shard", "shard", i, "epoch", epoch)
	s.learned = s.known && s.knownEpoch == epoch
	if learn := l.learn.Load(); learn != nil && !s.learned && l.watchCtx.Err() == nil {
		// A takeover: another holder may have changed the shard's
		// cells. Learn them before any grant, holding the lock (so no
		// one changes them meanwhile) and named as the holder (so other
		// processes route their calls here rather than refuse them).
		(*learn)(l.watchCtx, func(cellKey string) bool { return Of(cellKey, l.n) == i })
		s.learned = l.watchCtx.Err() == nil // a learn cut short knows nothing
	}
	return true, nil
}

// unlockLocked lets shard i go.
func (l *Lease) unlockLocked(i int, s *shardState) error {
	if s.f == nil {
		return nil
	}
	if l.addr != "" {
		// Still under the lock: the next holder writes its own record
		// only after it has the lock.
		if err := clearHolder(l.dir, i); err != nil {
			l.log.Warn("clearing the shard's holder record", "shard", i, "err", err)
		}
	}
	s.known, s.knownEpoch = s.learned, s.recorded
	err := errors.Join(flock.Unlock(s.f), s.f.Close())
	s.f, s.grants = nil, nil
	if err != nil {
		l.log.Warn("letting a shard go", "shard", i, "err", err)
		return err
	}
	l.log.Debug("let shard go", "shard", i, "epoch", s.epoch)
	return nil
}

// record makes g's epoch durable in the shard file, with every epoch
// granted so far: the value written is the newest granted, moved up by one
// if need be so that it lands in the slot the recorded epoch does not
// occupy (a torn write then leaves the recorded epoch readable).
func (l *Lease) record(g *grant) error {
	s := &l.shards[g.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recorded >= g.epoch && s.grants[g.cell] == g {
		return nil
	}
	if s.f == nil || s.grants[g.cell] != g {
		if err := g.CheckWrite(); err != nil {
			return err
		}
		return &lease.LeaseLapsedError{Cell: g.cell}
	}
	e := s.epoch
	if e%2 == s.recorded%2 {
		e++
	}
	if err := writeEpoch(s.f, e); err != nil {
		return fmt.Errorf("shard %d: record epoch %d: %w", g.shard, e, err)
	}
	s.epoch, s.recorded = e, e
	return nil
}

// release ends g and lets its shard go when g was the shard's last grant.
func (l *Lease) release(g *grant) error {
	s := &l.shards[g.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grants[g.cell] != g {
		return nil // superseded, or ended by Close
	}
	delete(s.grants, g.cell)
	g.lose(lease.ErrReleased)
	if len(s.grants) == 0 {
		return l.unlockLocked(g.shard, s)
	}
	return nil
}

// Close ends every grant (their Lost channels close with ErrClosed) and
// lets every shard go. Later TryAcquire calls fail with ErrClosed.
func (l *Lease) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.watchMu.Lock()
	cancel, done := l.watchCancel, l.watchDone
	l.watchMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	var errs []error
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for _, g := range s.grants {
			g.lose(ErrClosed)
		}
		errs = append(errs, l.unlockLocked(i, s))
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}
