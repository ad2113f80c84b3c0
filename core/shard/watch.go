package shard

import (
	"context"
	"errors"
	"os"
	"time"
)

// LearnFunc learns what the cells of a shard this Lease just took over
// stored (their alarms, for a runtime). owns reports whether a cell key
// ("<Class>:<id>") belongs to that shard. It runs holding the shard's lock
// and before any grant of the shard, so it must not wait for a grant of
// the shard itself; ctx ends when the Lease closes.
type LearnFunc func(ctx context.Context, owns func(cellKey string) bool)

// DefaultWatchInterval is how often Watch looks for shards that other
// processes let go.
const DefaultWatchInterval = 250 * time.Millisecond

// ErrWatching is returned by a second call to Watch.
var ErrWatching = errors.New("shard: the lease already watches")

// Watch makes this Lease learn the cells of every shard it takes over.
// From now on, learn runs whenever this Lease takes a shard's lock and
// the shard's epoch shows a grant since this Lease last knew the shard
// (it never held it, or another process held it since) — holding the
// lock and before any grant of the shard, so nothing changes the shard's
// cells meanwhile; a take that finds the epoch where this Lease left it
// skips learn, since no cell changes without a grant.
//
// And right away, then every interval (DefaultWatchInterval if zero),
// Watch looks at the shards this Lease does not hold: one whose epoch
// moved since this Lease last knew it (or that it never knew), and that no
// process holds any more (its holder let it go, or died), is taken just
// long enough to run learn and let go again (unless a grant of this Lease
// came meanwhile). So a process learns of a
// shard another one gave up without any call for its cells — a restart
// keeps the alarms the old process stored. While it is taken for this,
// other processes are routed to this one (WithAddr) as for any holder.
//
// Watch returns once it has looked at every shard (the free ones are
// learned before it returns); the watching ends when ctx ends or with Close
// (after which takes no longer learn). A Lease watches once: a second
// call fails with ErrWatching.
func (l *Lease) Watch(ctx context.Context, interval time.Duration, learn LearnFunc) error {
	if learn == nil {
		return errors.New("shard: Watch needs a LearnFunc")
	}
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	l.watchMu.Lock()
	if l.closed.Load() {
		l.watchMu.Unlock()
		return ErrClosed
	}
	// Every shard mutex, so no take runs half with and half without it.
	for i := range l.shards {
		l.shards[i].mu.Lock()
	}
	ok := l.learn.Load() == nil
	if ok {
		l.watchCtx, l.watchCancel = context.WithCancel(ctx)
		l.watchDone = make(chan struct{})
		l.learn.Store(&learn)
	}
	for i := range l.shards {
		l.shards[i].mu.Unlock()
	}
	l.watchMu.Unlock()
	if !ok {
		return ErrWatching
	}
	// The shards free now are learned before Watch returns, so a process
	// knows them before it serves; the rest as they come free.
	for i := range l.shards {
		l.look(i)
	}
	go l.watch(l.watchCtx, interval)
	return nil
}

func (l *Lease) watch(ctx context.Context, interval time.Duration) {
	defer close(l.watchDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range l.shards {
			if ctx.Err() != nil {
				return
			}
			l.look(i)
		}
	}
}

// look learns shard i if it moved since this Lease knew it and nobody
// holds it now.
func (l *Lease) look(i int) {
	s := &l.shards[i]
	s.mu.Lock()
	held, known, at := s.f != nil, s.known, s.knownEpoch
	s.mu.Unlock()
	if held {
		return
	}
	// A read without the lock: a holder writing the file tears at most
	// the slot it writes, and an epoch read short is caught next time.
	if known {
		f, err := os.Open(lockPath(l.dir, i))
		if err != nil {
			return
		}
		epoch, err := readEpoch(f)
		f.Close()
		if err != nil || epoch == at {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil || l.closed.Load() {
		return
	}
	taken, err := l.lockLocked(i, s)
	if err != nil {
		l.log.Warn("looking at a shard another process let go", "shard", i, "err", err)
		return
	}
	if taken && len(s.grants) == 0 {
		l.unlockLocked(i, s)
	}
}
