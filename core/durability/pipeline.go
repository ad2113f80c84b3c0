package durability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
)

// Pipeline is the ordered group commit a bucket-backed log runs: commits
// are queued without I/O, and one goroutine uploads whatever is queued as
// one batch, so commits that arrive while an upload is in flight share
// the next one. A batch's commits become durable together, in order; a
// failed upload fails its batch and every commit after it, because an
// acknowledged commit must never follow a lost one.
type Pipeline[T any] struct {
	opts PipelineOptions[T]

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []queued[T]
	failed  error
	closing bool // no more appends; the uploader drains, then exits
	abandon bool // the uploader exits without draining
	done    chan struct{}

	// With Credit: stored batches waiting for their credit, in order, and
	// the resolver that settles them (closed once it has settled all).
	credits  chan credited[T]
	resolved chan struct{}
}

type credited[T any] struct {
	batch []queued[T]
	d     Durable
}

// PipelineOptions configure a Pipeline.
type PipelineOptions[T any] struct {
	// Upload stores one batch, oldest first; it runs on the pipeline's
	// goroutine only. A non-nil error fails the batch and the pipeline.
	Upload func(batch []T) error
	// Sync, if set, makes the batch's commits durable on the local disk
	// (OpenRequest.SyncLocal): it runs once per batch, on a goroutine of
	// its own while Upload runs, and the batch resolves only when both
	// succeeded. Its failure fails the batch and the pipeline, as an
	// upload's does (a failed fsync is not retried: what it covered may
	// be lost).
	Sync func() error
	// After, if set, runs on the same goroutine after each stored batch
	// (compaction, say); its failures are its own to report.
	After func()
	// Credit, if set, makes a stored batch durable only once the Durable
	// it returns resolves: it is called on the uploader right after the
	// batch was stored, and the uploader goes on with the next batch while
	// this one waits (a node log's read of its node record after the
	// bundle's PUT, say). Batches still resolve in order, on a goroutine
	// of their own; a failed credit fails its batch and the pipeline, as a
	// failed upload does. A final Close waits for every credit.
	Credit func(batch []T) Durable
	// Closed is the error commits fail with when the pipeline is closed
	// without a final flush.
	Closed error
	// Logger receives FailMessage when an upload fails.
	Logger      *slog.Logger
	FailMessage string
	// Clock times uploads for the group-commit rule (nextGroup); the real
	// clock if nil.
	Clock clock.Clock
}

type queued[T any] struct {
	item   T
	future *Future
}

// NewPipeline starts a pipeline's uploader.
func NewPipeline[T any](opts PipelineOptions[T]) *Pipeline[T] {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Clock = clock.Or(opts.Clock)
	p := &Pipeline[T]{opts: opts, done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	if opts.Credit != nil {
		p.credits, p.resolved = make(chan credited[T], 1024), make(chan struct{})
		go p.resolve()
	}
	go p.run()
	return p
}

// Append queues the item build returns and returns its future. build runs
// under the pipeline's lock, so items are queued in the order their
// numbers are drawn; it returns an error to fail the pipeline (the commit
// cannot be logged, and no later one may be acknowledged). A failed or
// closing pipeline resolves the future at once with its error.
func (p *Pipeline[T]) Append(build func() (T, error)) Durable {
	f := NewFuture()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed != nil {
		f.Resolve(p.failed)
		return f
	}
	if p.closing {
		f.Resolve(p.opts.Closed)
		return f
	}
	item, err := build()
	if err != nil {
		p.failLocked(err)
		f.Resolve(p.failed)
		return f
	}
	p.queue = append(p.queue, queued[T]{item, f})
	p.cond.Signal()
	return f
}

// Fail fails the pipeline: every queued and later commit gets err.
func (p *Pipeline[T]) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLocked(err)
}

// Err is the error that failed the pipeline, if any.
func (p *Pipeline[T]) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *Pipeline[T]) failLocked(err error) {
	if p.failed == nil {
		p.failed = err
	}
	for _, q := range p.queue {
		q.future.Resolve(p.failed)
	}
	p.queue = nil
	p.cond.Broadcast()
}

// Abandoned reports that the pipeline was closed without a final flush:
// an upload in flight should stop retrying.
func (p *Pipeline[T]) Abandoned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abandon
}

// Close stops the pipeline. final waits for every queued commit to be
// stored and returns the failure, if any; otherwise queued commits fail
// with Closed at once. If ctx ends first, the uploader is abandoned.
func (p *Pipeline[T]) Close(ctx context.Context, final bool) error {
	p.mu.Lock()
	p.closing = true
	if !final {
		p.abandon = true
		for _, q := range p.queue {
			q.future.Resolve(p.opts.Closed)
		}
		p.queue = nil
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.mu.Lock()
		p.abandon = true
		p.cond.Broadcast()
		p.mu.Unlock()
		return ctx.Err()
	}
	if p.resolved != nil {
		select {
		case <-p.resolved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if final && p.failed != nil {
		return p.failed
	}
	return nil
}

// resolve settles stored batches in order as their credits resolve (see
// PipelineOptions.Credit).
func (p *Pipeline[T]) resolve() {
	defer close(p.resolved)
	var failed error // a credit failed: every later batch fails with it
	for c := range p.credits {
		<-c.d.Done()
		err := c.d.Err()
		if err == nil {
			err = failed
		}
		if err != nil {
			failed = err
			p.opts.Logger.Error(p.opts.FailMessage, "err", err)
			p.mu.Lock()
			for _, q := range c.batch {
				q.future.Resolve(err)
			}
			p.failLocked(err)
			p.mu.Unlock()
			continue
		}
		for _, q := range c.batch {
			q.future.Resolve(nil)
		}
	}
}

// NextGroup is the group-commit rule of the pipeline, shared with the node
// log's flushes (core/nodelog); see nextGroup.
func NextGroup(queued, prevGroup int, idle, lastUpload time.Duration) (start bool, wait time.Duration) {
	return nextGroup(queued, prevGroup, idle, lastUpload)
}

// nextGroup is the group-commit rule: whether the uploader, free since
// idle ago with queued commits waiting, starts the next upload now, and if
// not, how much longer it waits at most. It starts once as many commits
// are queued as the previous upload carried (prevGroup), or once half the
// previous upload's duration (lastUpload) has passed since it became
// free, whichever comes first. Without it, the callers an upload releases
// all at once find the uploader already gone with the one or two commits
// that were ready, and groups alternate small and large: two uploads for
// one group's worth of commits. A lone caller (a previous group of one) is
// never delayed, nor is the first upload.
func nextGroup(queued, prevGroup int, idle, lastUpload time.Duration) (start bool, wait time.Duration) {
	if queued >= prevGroup {
		return true, 0
	}
	bound := lastUpload / 2
	if idle >= bound {
		return true, 0
	}
	return false, bound - idle
}

// run uploads batches in order until the pipeline closes or fails.
func (p *Pipeline[T]) run() {
	defer close(p.done)
	if p.credits != nil {
		defer close(p.credits)
	}
	clk := p.opts.Clock
	var (
		prevGroup  int
		lastUpload time.Duration
		free       = clk.Now() // when the last upload ended
	)
	for {
		p.mu.Lock()
		var timer clock.Timer
		for {
			for len(p.queue) == 0 && !p.closing && p.failed == nil {
				p.cond.Wait()
			}
			if p.closing || p.failed != nil {
				break
			}
			start, wait := nextGroup(len(p.queue), prevGroup, clk.Now().Sub(free), lastUpload)
			if start {
				break
			}
			if timer == nil {
				timer = clk.AfterFunc(wait, func() {
					p.mu.Lock()
					p.cond.Broadcast()
					p.mu.Unlock()
				})
			}
			p.cond.Wait() // a commit queued, the bound passed, or a close
		}
		if timer != nil {
			timer.Stop()
		}
		if p.abandon || p.failed != nil || (p.closing && len(p.queue) == 0) {
			p.mu.Unlock()
			return
		}
		batch := p.queue
		p.queue = nil
		p.mu.Unlock()

		items := make([]T, len(batch))
		for i, q := range batch {
			items[i] = q.item
		}
		began := clk.Now()
		err := p.store(items)
		free = clk.Now()
		prevGroup, lastUpload = len(items), free.Sub(began)
		if err != nil {
			p.opts.Logger.Error(p.opts.FailMessage, "err", err)
			p.mu.Lock()
			for _, q := range batch {
				q.future.Resolve(err)
			}
			p.failLocked(err)
			p.mu.Unlock()
			return
		}
		if p.opts.Credit != nil {
			p.credits <- credited[T]{batch, p.opts.Credit(items)}
		} else {
			for _, q := range batch {
				q.future.Resolve(nil)
			}
		}
		if p.opts.After != nil {
			p.opts.After()
		}
	}
}

// store uploads one batch and, when the pipeline has a Sync, syncs the
// local disk at the same time: the batch's local commits were all written
// before it was taken from the queue, so the one sync covers them all.
func (p *Pipeline[T]) store(items []T) error {
	if p.opts.Sync == nil {
		return p.opts.Upload(items)
	}
	synced := make(chan error, 1)
	go func() { synced <- p.opts.Sync() }()
	uerr := p.opts.Upload(items)
	serr := <-synced
	if serr != nil {
		serr = fmt.Errorf("sync the local database: %w", serr)
	}
	return errors.Join(uerr, serr)
}

// FirstObject is the key of an epoch's first log object and the bytes this
// log means to write there: all of them (Data), or, for an object streamed
// without being held, its Size and its last bytes (Tail), which must
// include a checksum of everything before them (an LTX file's trailer).
type FirstObject struct {
	Cell  string
	Epoch uint64
	Key   string
	Data  []byte
	Size  int64
	Tail  []byte
}

func sameObject(ctx context.Context, s store.Store, obj FirstObject) (bool, error) {
	if obj.Tail == nil {
		got, err := s.Get(ctx, obj.Key)
		if err != nil {
			return false, err
		}
		return bytes.Equal(got.Data, obj.Data), nil
	}
	off := max(obj.Size-int64(len(obj.Tail)), 0)
	r, err := store.NewRangeReader(ctx, s, obj.Key, off, int64(len(obj.Tail)))
	if errors.Is(err, store.ErrInvalidRange) {
		return false, nil // shorter than ours: not ours
	}
	if err != nil {
		return false, err
	}
	defer r.Close()
	if r.Size != obj.Size {
		return false, nil
	}
	tail, err := io.ReadAll(r)
	if err != nil {
		return false, err
	}
	return bytes.Equal(tail, obj.Tail), nil
}

// Collision decides a create-only write of an epoch's first object that
// found its key taken: the object is this log's own (an earlier attempt
// applied but its answer was lost) and nil is returned, or another
// writer's, which the epoch must not overwrite: *EpochInUseError.
//
// With Data the whole object is read back and compared; with Tail only
// the object's size and last len(Tail) bytes (one ranged read).
func Collision(ctx context.Context, s store.Store, obj FirstObject, log *slog.Logger) error {
	same, err := sameObject(ctx, s, obj)
	if err != nil {
		return fmt.Errorf("%s exists; reading it back to tell whose it is: %w", obj.Key, err)
	}
	if same {
		return nil
	}
	err = &EpochInUseError{Cell: obj.Cell, Epoch: obj.Epoch, Key: obj.Key, Newest: obj.Epoch}
	if log != nil {
		log.Error("another writer already started this epoch; nothing of it is overwritten", "key", obj.Key, "err", err)
	}
	return err
}
