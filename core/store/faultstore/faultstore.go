// Package faultstore wraps a store.Store and injects the failures real
// buckets produce: latency, errors, requests lost on the way (nothing
// applied, caller told "ambiguous"), responses lost on the way back (the
// write applied, caller told "ambiguous") and stale listings. The faults
// are a driver middleware under a store.Bucket of their own, so the
// Bucket's rules apply to them as to a real bucket's failures. Faults are
// drawn from a seeded generator, so a run is repeatable for a given seed
// and call order, and can also be scripted one call at a time ("fail the
// next put of key K"). The wrapper counts every call, so a test can assert
// how many bucket requests a protocol made.
//
// It is meant for tests and simulations; nothing in production uses it.
package faultstore

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/store"
)

// Op names a Store method.
type Op string

// The four operations of the Store port.
const (
	OpGet    Op = "get"
	OpPut    Op = "put"
	OpDelete Op = "delete"
	OpList   Op = "list"
)

func (op Op) isWrite() bool { return op == OpPut || op == OpDelete }

// Errors the wrapper injects. They arrive wrapped in a *store.OpError;
// dropped requests and lost responses also match store.ErrAmbiguous.
var (
	// ErrInjected is a failure before the call reached the store; nothing
	// was applied.
	ErrInjected = errors.New("faultstore: injected failure")
	// ErrDropped is a write lost before it reached the store: nothing was
	// applied, but the caller cannot know that.
	ErrDropped = errors.New("faultstore: request lost before it reached the store")
	// ErrLostResponse is a write the store applied whose answer was lost.
	ErrLostResponse = errors.New("faultstore: response lost after the store handled the write")
)

// Faults are the random faults applied to one kind of call. Probabilities
// are in [0, 1]; Drop and LoseResponse apply only to Put and Delete (for a
// read, losing the request or the answer is just a failure: use Fail).
type Faults struct {
	Fail         float64
	Drop         float64
	LoseResponse float64
	// Latency is added before every call, plus a uniform random extra in
	// [0, Jitter).
	Latency time.Duration
	Jitter  time.Duration
}

// Config sets up a Store. The zero value injects nothing and only counts.
type Config struct {
	// Seed makes the random faults repeatable.
	Seed uint64
	// All applies to every operation without an entry in PerOp.
	All Faults
	// PerOp replaces All for the operations it names.
	PerOp map[Op]Faults
	// StaleList is the probability that a List shows the bucket as it was
	// before the most recent writes made through this wrapper: keys
	// created recently are missing, keys replaced recently show their
	// previous size and version, and keys deleted recently are still
	// listed (when they fall inside the page's range).
	StaleList float64
	// StaleWindow is how many of the most recent writes a stale listing
	// may hide; 0 means 16.
	StaleWindow int
	// Clock is what added latency waits on (default: the real clock). With
	// a clock.Fake, a delayed call blocks until the test advances it.
	Clock clock.Clock
	// Sleep, when set, replaces waiting on Clock; it must return ctx's
	// error if ctx ends first. A simulator can use it to account virtual
	// time without blocking.
	Sleep func(ctx context.Context, d time.Duration) error
	// BeforeCall, when set, runs before every call, after the fault was
	// chosen and before any latency. A non-nil error fails the call with
	// that error and applies nothing. Simulations use it to interleave
	// callers deterministically.
	BeforeCall func(ctx context.Context, c Call) error
	// Logger receives a debug record for every injected fault.
	Logger *slog.Logger
}

// Call describes one call for Config.BeforeCall.
type Call struct {
	Seq uint64 // 1 for the first call through the wrapper, then 2, 3, ...
	Op  Op
	Key string // the key, or the prefix for List
}

// Store is the fault-injecting wrapper: a store.Bucket over a driver
// middleware (faults) around the wrapped store's driver, so the Bucket's
// rules (validation, error kinds, ambiguity) apply to the faults as they
// do to a real bucket. It is safe for concurrent use; the faults each call
// gets depend only on the seed and the order in which calls enter the
// wrapper.
type Store struct {
	*store.Bucket
	inner store.Store
	f     *faults
}

// faults is the store.Driver that injects the faults.
type faults struct {
	inner store.Driver
	cfg   Config
	clock clock.Clock

	mu     sync.Mutex
	rng    *rand.Rand
	seq    uint64
	rules  []*Rule
	stats  Stats
	recent []write                     // the last StaleWindow writes, oldest first
	known  map[string]store.ObjectInfo // last state written through the wrapper
}

// New wraps inner.
func New(inner store.Store, cfg Config) *Store {
	if cfg.StaleWindow <= 0 {
		cfg.StaleWindow = 16
	}
	f := &faults{
		inner: store.DriverFor(inner),
		cfg:   cfg,
		clock: clock.Or(cfg.Clock),
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		known: make(map[string]store.ObjectInfo),
	}
	return &Store{Bucket: store.NewBucket(f), inner: inner, f: f}
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Driver = (*faults)(nil)
)

// Inner returns the wrapped store, for reading the truth behind the faults.
func (s *Store) Inner() store.Store { return s.inner }

// Close closes the wrapped store.
func (s *faults) Close() error { return s.inner.Close() }

// Classify says the injected failures are nothing more than failures (the
// Bucket neither retries them nor calls them anything); the wrapped
// driver's own errors keep its classification.
func (s *faults) Classify(err error) store.ErrorClass {
	if errors.Is(err, ErrInjected) || errors.Is(err, ErrDropped) || errors.Is(err, ErrLostResponse) {
		return store.ErrorClass{}
	}
	return s.inner.Classify(err)
}

// plan is what happens to one call.
type plan struct {
	call Call
	fail error // non-nil: fail before the call with this error
	// failAfter, when > 0, makes a streamed call's body fail with fail
	// after that many bytes instead of failing before the call.
	failAfter int64
	drop      bool
	lose      bool
	stale     bool
	delay     time.Duration
}

// decide draws the call's random numbers (always the same count, so changing
// one probability does not shift the faults of later calls), then lets a
// scripted rule override them.
func (s *faults) decide(op Op, key string) plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	f, ok := s.cfg.PerOp[op]
	if !ok {
		f = s.cfg.All
	}
	uFail, uDrop, uLose, uJitter, uStale := s.rng.Float64(), s.rng.Float64(), s.rng.Float64(), s.rng.Float64(), s.rng.Float64()
	p := plan{call: Call{Seq: s.seq, Op: op, Key: key}, delay: f.Latency}
	if f.Jitter > 0 {
		p.delay += time.Duration(uJitter * float64(f.Jitter))
	}
	if r := s.matchRule(op, key); r != nil {
		p.delay += r.Delay
		switch r.Fault {
		case Fail:
			p.fail = r.Err
			if p.fail == nil {
				p.fail = ErrInjected
			}
			p.failAfter = r.AfterBytes
		case Drop:
			p.drop = op.isWrite()
		case LoseResponse:
			p.lose = op.isWrite()
		case StaleList:
			p.stale = op == OpList
		}
	} else {
		switch {
		case uFail < f.Fail:
			p.fail = ErrInjected
		case op.isWrite() && uDrop < f.Drop:
			p.drop = true
		case op.isWrite() && uLose < f.LoseResponse:
			p.lose = true
		}
		p.stale = op == OpList && uStale < s.cfg.StaleList
	}
	st := s.stats.of(op)
	st.Calls++
	st.Delay += p.delay
	switch {
	case p.fail != nil:
		st.Failed++
	case p.drop:
		st.Dropped++
	case p.lose:
		st.Lost++
	case p.stale:
		st.Stale++
	}
	return p
}

// begin runs the hook and the latency; a non-nil error ends the call
// before it reaches the inner store.
func (s *faults) begin(ctx context.Context, p plan) error {
	if s.cfg.BeforeCall != nil {
		if err := s.cfg.BeforeCall(ctx, p.call); err != nil {
			return err
		}
	}
	if p.delay > 0 {
		if err := s.sleep(ctx, p.delay); err != nil {
			return &store.OpError{Op: string(p.call.Op), Key: p.call.Key, Err: err}
		}
	}
	switch {
	case p.fail != nil:
		s.log(p, "injected failure")
		return &store.OpError{Op: string(p.call.Op), Key: p.call.Key, Err: p.fail}
	case p.drop:
		s.log(p, "dropped request")
		return store.Ambiguous(string(p.call.Op), p.call.Key, ErrDropped)
	}
	return nil
}

func (s *faults) sleep(ctx context.Context, d time.Duration) error {
	if s.cfg.Sleep != nil {
		return s.cfg.Sleep(ctx, d)
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

func (s *faults) log(p plan, what string) {
	if s.cfg.Logger != nil {
		s.cfg.Logger.Debug("faultstore: "+what, "seq", p.call.Seq, "op", string(p.call.Op), "key", p.call.Key)
	}
}

// Delete implements store.Driver.
func (s *faults) Delete(ctx context.Context, key string) error {
	p := s.decide(OpDelete, key)
	if err := s.begin(ctx, p); err != nil {
		return err
	}
	err := s.inner.Delete(ctx, key)
	if err == nil {
		s.recordWrite(key, nil)
	}
	if p.lose {
		s.log(p, "lost response")
		return store.Ambiguous("delete", key, ErrLostResponse)
	}
	return err
}

// List implements store.Driver.
func (s *faults) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	p := s.decide(OpList, opts.Prefix)
	if err := s.begin(ctx, p); err != nil {
		return store.ListPage{}, err
	}
	page, err := s.inner.List(ctx, opts)
	if err != nil || !p.stale {
		return page, err
	}
	s.log(p, "stale listing")
	return s.staleView(page, opts), nil
}
