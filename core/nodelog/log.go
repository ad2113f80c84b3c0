package nodelog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
)

// Confirmer is the fleet node's side of the node log: the node record the
// log's state lives in (core/fleet's Node implements it).
type Confirmer interface {
	// ConfirmLog reads the node's record and returns nil only if it
	// still carries this session's log open at its log epoch. A record
	// that says otherwise (recovering or sealed by another node, replaced
	// by another session) fences the node and returns why; a read that
	// fails returns its error and fences nothing.
	ConfirmLog(ctx context.Context) error
	// Fence self-fences the node for good: the log can no longer make the
	// bucket complete for a cell it owns (a cell's rows could not be
	// tiered before its release), so another node must recover the log.
	Fence(reason string)
	// Fenced is closed once the node fenced.
	Fenced() <-chan struct{}
}

// Row is one level-0 LTX file of one TXID of one cell, as it goes into a
// bundle.
type Row = ltx.BundleEntry

// Options configure a node log.
type Options struct {
	// Store is the bucket. Required.
	Store store.Store
	// Node and Generation name the session: the node id and its
	// ownership_index_generation. Required.
	Node, Generation string
	// LogEpoch is the log epoch the session published (default 1).
	LogEpoch uint64
	// Confirmer proves the session current after each flush. Required.
	Confirmer Confirmer
	// MaxBundleBytes: a flush takes at most this many bytes of rows
	// (default 8 MiB; a larger single submission goes alone). While a
	// PUT is in flight, more than this queued starts another flush, up
	// to MaxFlushes at once.
	MaxBundleBytes int
	// MaxFlushes bounds the bundle PUTs in flight (default 4).
	MaxFlushes int
	// UploadRetries, RetryDelay and UploadTimeout retry a bundle PUT as
	// the LTX log retries its uploads (defaults 3, 100 ms, 60 s).
	UploadRetries int
	RetryDelay    time.Duration
	UploadTimeout time.Duration
	// ConfirmTimeout bounds one read of the node record (default 10 s).
	ConfirmTimeout time.Duration
	// TierAge is how long a cell's oldest untiered row may wait before its
	// log tiers it (read by core/ltxlog; default 30 s).
	TierAge time.Duration
	Clock   clock.Clock
	Logger  *slog.Logger
	// MeterProvider receives the node log's metrics (docs/metrics.md).
	MeterProvider metric.MeterProvider
}

// ErrClosed fails a Submit after Close.
var ErrClosed = errors.New("nodelog: the node log is closed")

// FlushError is a bundle that could not be stored: every row in it, and
// every later commit of its cells, fails.
type FlushError struct {
	Key string
	Err error
}

func (e *FlushError) Error() string { return fmt.Sprintf("store bundle %s: %v", e.Key, e.Err) }
func (e *FlushError) Unwrap() error { return e.Err }

// CreditError is a bundle stored but not credited: the read of the node
// record after it failed, or the record no longer carries this session's
// open log (then the node fenced).
type CreditError struct {
	Key string
	Err error
}

func (e *CreditError) Error() string {
	return fmt.Sprintf("bundle %s is stored but this node cannot prove its log current: %v", e.Key, e.Err)
}
func (e *CreditError) Unwrap() error { return e.Err }

// Log is one node session's node log. It is safe for concurrent use.
type Log struct {
	opts    Options
	clk     clock.Clock
	log     *slog.Logger
	metrics *metrics.NodeLog
	confirm *checker

	mu       sync.Mutex
	cond     *sync.Cond
	queue    []*submission
	queued   int // bytes in queue
	flushing int // bundle PUTs in flight
	seq      uint64
	closed   bool
	// The group-commit rule's memory (flush.go): cells in the previous
	// bundle, its PUT's duration, when it returned.
	prevGroup int
	lastPut   time.Duration
	free      time.Time
	done      chan struct{} // closed when the flusher exits

	gc *coverage // credited bundles not yet deleted (gc.go)
}

// submission is one Submit's rows on their way: stored once its bundle's
// PUT returned (storeErr), done once it is credited or failed (err).
type submission struct {
	rows     []Row
	bytes    int
	stored   chan struct{}
	storeErr error
	done     chan struct{}
	err      error
}

// Pending is a submission in flight (SubmitAsync): Stored is closed once
// its bundle's PUT returned (StoreErr says how), and, as a
// durability.Durable, it resolves once the rows are credited (Err nil) or
// will never be.
type Pending struct{ s *submission }

// Stored is closed once the bundle holding the rows was stored or failed.
func (p Pending) Stored() <-chan struct{} { return p.s.stored }

// StoreErr is the PUT's failure, once Stored is closed (nil: stored).
func (p Pending) StoreErr() error { <-p.s.stored; return p.s.storeErr }

// Done is closed once the rows are credited or failed.
func (p Pending) Done() <-chan struct{} { return p.s.done }

// Err is nil once the rows are credited; otherwise why they never will be.
func (p Pending) Err() error { <-p.s.done; return p.s.err }

// New starts a node log.
func New(opts Options) (*Log, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("nodelog: Options.Store is required")
	case opts.Node == "" || opts.Generation == "":
		return nil, errors.New("nodelog: Options.Node and Options.Generation are required")
	case opts.Confirmer == nil:
		return nil, errors.New("nodelog: Options.Confirmer is required")
	}
	if opts.LogEpoch == 0 {
		opts.LogEpoch = 1
	}
	if opts.MaxBundleBytes <= 0 {
		opts.MaxBundleBytes = 8 << 20
	}
	if opts.MaxFlushes <= 0 {
		opts.MaxFlushes = 4
	}
	if opts.UploadRetries == 0 {
		opts.UploadRetries = 3
	}
	if opts.RetryDelay == 0 {
		opts.RetryDelay = 100 * time.Millisecond
	}
	if opts.UploadTimeout == 0 {
		opts.UploadTimeout = 60 * time.Second
	}
	if opts.ConfirmTimeout == 0 {
		opts.ConfirmTimeout = 10 * time.Second
	}
	if opts.TierAge == 0 {
		opts.TierAge = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	l := &Log{opts: opts, clk: clock.Or(opts.Clock), done: make(chan struct{})}
	l.log = opts.Logger.With("node_log", layout.SessionLeader(opts.Node, opts.Generation))
	l.cond = sync.NewCond(&l.mu)
	var err error
	if l.metrics, err = metrics.NewNodeLog(opts.MeterProvider, l.UntieredAge); err != nil {
		return nil, fmt.Errorf("nodelog: metrics: %w", err)
	}
	l.confirm = &checker{check: l.confirmOnce}
	l.gc = newCoverage(l)
	go l.flusher()
	return l, nil
}

// Metrics is the log's instruments (nil records nothing), for the cell
// logs that tier its rows.
func (l *Log) Metrics() *metrics.NodeLog { return l.metrics }

// Options is the log's configuration, defaults filled in.
func (l *Log) Options() Options { return l.opts }

// Submit hands rows to the next flush and returns once they are credited:
// stored in a bundle and proven current. Rows are one cell's, in TXID
// order; a cell keeps its submissions in order (its log uploads one group
// at a time), so its rows are in bundles in order. An error (a
// *FlushError, a *CreditError, ErrClosed, the node's fence, ctx's end)
// means the rows may or may not be in the bucket, and were not
// acknowledged.
func (l *Log) Submit(ctx context.Context, rows []Row) error {
	p := l.SubmitAsync(rows)
	select {
	case <-p.Done():
		return p.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SubmitAsync is Submit without the wait: the caller learns when the rows
// are stored (a cell's log then goes on with its next group while this
// one's credit read is made) and when they are credited.
func (l *Log) SubmitAsync(rows []Row) Pending {
	s := &submission{rows: rows, stored: make(chan struct{}), done: make(chan struct{})}
	for _, r := range rows {
		s.bytes += len(r.Data) + len(r.Cell) + 34
	}
	fail := func(err error) Pending {
		s.storeErr, s.err = err, err
		close(s.stored)
		close(s.done)
		return Pending{s}
	}
	if len(rows) == 0 {
		return fail(nil)
	}
	if err := l.fencedErr(); err != nil {
		return fail(err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fail(ErrClosed)
	}
	l.queue = append(l.queue, s)
	l.queued += s.bytes
	l.cond.Broadcast()
	l.mu.Unlock()
	return Pending{s}
}

// Confirm returns once a read of the node record that started after the
// call shows the session's log open (the proof Submit gives its rows, for
// a write that went to the bucket otherwise: an epoch's snapshot, written
// to the cell's own prefix).
func (l *Log) Confirm(ctx context.Context) error {
	if err := l.fencedErr(); err != nil {
		return err
	}
	return l.confirm.after(ctx)
}

// Fenced is closed once the node fenced: nothing is credited after it.
func (l *Log) Fenced() <-chan struct{} { return l.opts.Confirmer.Fenced() }

// Fence fences the node (see Confirmer.Fence).
func (l *Log) Fence(reason string) { l.opts.Confirmer.Fence(reason) }

// ErrFenced is returned once the node has fenced.
var ErrFenced = errors.New("nodelog: this node self-fenced; its node log credits nothing more")

func (l *Log) fencedErr() error {
	select {
	case <-l.opts.Confirmer.Fenced():
		return ErrFenced
	default:
		return nil
	}
}

// confirmReadAttempts is how often a read of the node record that fails
// (not one that finds the log closed) is tried before the flushes waiting
// on it fail: a transient error should not fail a group whose next group
// a later read would credit.
const confirmReadAttempts = 3

func (l *Log) confirmOnce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.ConfirmTimeout)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		if err = l.opts.Confirmer.ConfirmLog(ctx); err == nil || attempt == confirmReadAttempts || l.fencedErr() != nil {
			return err
		}
		l.log.Warn("reading the node record to credit a flush failed; retrying", "attempt", attempt, "err", err)
		t := l.clk.NewTimer(time.Duration(attempt) * 50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
}

// Close stops the log once every queued row is flushed, waits for the
// bundles to be deleted that every cell has covered, and deletes the
// session's remaining bundles when final is set and the node has not
// fenced: a node closes its log only after its runtime closed every cell,
// each of which tiered its rows first, so nothing left there is needed
// (an uncredited bundle whose PUT failed, say). A fenced node deletes
// nothing: the node that recovers its log decides.
func (l *Log) Close(ctx context.Context, final bool) error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.gc.close()
	if !final || l.fencedErr() != nil {
		return nil
	}
	return l.deleteSession(ctx)
}

// deleteSession deletes every bundle of the session.
func (l *Log) deleteSession(ctx context.Context) error {
	prefix := layout.BundlePrefix(l.opts.Node, l.opts.Generation)
	var errs []error
	err := store.ListEach(ctx, l.opts.Store, store.ListOptions{Prefix: prefix}, func(p store.ListPage) error {
		for _, o := range p.Objects {
			if err := l.opts.Store.Delete(ctx, o.Key); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}
