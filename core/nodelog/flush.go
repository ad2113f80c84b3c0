package nodelog

import (
	"context"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/store"
)

// flush is one bundle: the submissions it carries and its key.
type flush struct {
	seq  uint64
	key  string
	subs []*submission
	rows int
}

// mayStartLocked is the flush rule: rows are queued and either no PUT is
// in flight (the previous one returned) and the group-commit rule lets
// the next bundle go (durability.NextGroup: as many cells are queued as
// the previous bundle carried, or half the previous PUT's duration has
// passed since it returned; a lone commit goes at once), or more than a
// bundle's worth is queued and fewer than MaxFlushes PUTs are in flight.
// Without the rule, the cells one credit releases find the next bundle
// already gone with the few rows that were ready, and wait a whole PUT
// more. wait is how long until the rule lets a bundle go. Caller holds
// l.mu.
func (l *Log) mayStartLocked() (start bool, wait time.Duration) {
	if len(l.queue) == 0 {
		return false, 0
	}
	if l.flushing > 0 {
		return l.queued >= l.opts.MaxBundleBytes && l.flushing < l.opts.MaxFlushes, 0
	}
	if l.closed {
		return true, 0
	}
	return durability.NextGroup(len(l.queue), l.prevGroup, l.clk.Now().Sub(l.free), l.lastPut)
}

// flusher starts flushes by the rule above until the log closes and its
// queue is empty.
func (l *Log) flusher() {
	defer close(l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	var (
		timer   clock.Timer // wakes the loop when the rule's wait ends
		timerAt time.Time
	)
	for {
		for {
			start, wait := l.mayStartLocked()
			if start || (l.closed && len(l.queue) == 0) {
				break
			}
			if at := l.clk.Now().Add(wait); wait > 0 && (timer == nil || at.Before(timerAt)) {
				if timer != nil {
					timer.Stop()
				}
				timer, timerAt = l.clk.AfterFunc(wait, func() {
					l.mu.Lock()
					l.cond.Broadcast()
					l.mu.Unlock()
				}), at
			}
			l.cond.Wait()
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if len(l.queue) == 0 {
			// Closed: wait for the flushes in flight, then stop.
			for l.flushing > 0 {
				l.cond.Wait()
			}
			return
		}
		f := l.takeLocked()
		l.flushing++
		l.prevGroup = len(f.subs)
		go l.run(f)
	}
}

// takeLocked takes the next bundle's submissions off the queue (at most
// MaxBundleBytes, at least one) and draws its sequence number: one counter
// per session that advances whatever the flush's outcome, as celld's does.
func (l *Log) takeLocked() *flush {
	f := &flush{seq: l.seq}
	l.seq++
	f.key = layout.BundleKey(l.opts.Node, l.opts.Generation, l.opts.LogEpoch, f.seq)
	n := 0
	for len(l.queue) > 0 {
		s := l.queue[0]
		if len(f.subs) > 0 && n+s.bytes > l.opts.MaxBundleBytes {
			break
		}
		f.subs = append(f.subs, s)
		f.rows += len(s.rows)
		n += s.bytes
		l.queue = l.queue[1:]
	}
	l.queued -= n
	return f
}

// run stores one bundle, then credits it: the next flush may start as
// soon as the PUT returns, while this one waits for its proof.
func (l *Log) run(f *flush) {
	began := l.clk.Now()
	err := l.put(f)
	l.mu.Lock()
	l.flushing--
	l.free = l.clk.Now()
	l.lastPut = l.free.Sub(began)
	l.cond.Broadcast()
	l.mu.Unlock()
	for _, s := range f.subs {
		s.storeErr = err
		close(s.stored)
	}
	if err == nil {
		if cerr := l.confirm.after(context.Background()); cerr != nil {
			err = &CreditError{Key: f.key, Err: cerr}
		}
	}
	l.metrics.Flush(l.clk.Now().Sub(began), f.rows, err)
	if err == nil {
		// Registered before the submitters learn of the credit: a cell
		// that tiers at once finds the bundle to cover.
		l.gc.add(f)
	}
	for _, s := range f.subs {
		s.err = err
		close(s.done)
	}
	if err != nil {
		l.log.Error("bundle not credited; the commits in it and after it fail", "key", f.key, "rows", f.rows, "err", err)
		l.dropUncredited(f.key)
	}
}

// dropUncredited deletes a bundle that was not credited, if it was stored
// after all (an ambiguous PUT): its rows were acknowledged to no one. A
// fenced node deletes nothing (its recoverer decides). Best effort: a
// bundle left behind is deleted when the log closes, and a recoverer folds
// a row only while the cell's ownership record still names the epoch it
// was written in (see Fold), so the row of a cell that was reset and taken
// again is never folded.
func (l *Log) dropUncredited(key string) {
	if l.fencedErr() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.UploadTimeout)
	defer cancel()
	if err := l.opts.Store.Delete(ctx, key); err != nil {
		l.log.Warn("could not delete an uncredited bundle; it is deleted when the log closes", "key", key, "err", err)
	}
}

// put encodes and stores the bundle (a plain PUT: the key is this flush's
// alone), retried as the LTX log retries; nothing is put once the node
// fenced.
func (l *Log) put(f *flush) error {
	if err := l.fencedErr(); err != nil {
		return err
	}
	entries := make([]ltx.BundleEntry, 0, f.rows)
	for _, s := range f.subs {
		entries = append(entries, s.rows...)
	}
	data, err := ltx.EncodeBundle(entries)
	if err != nil {
		return &FlushError{Key: f.key, Err: err}
	}
	l.metrics.Bundle(len(data), f.rows)
	r := store.Retry{
		Retries: l.opts.UploadRetries, Delay: l.opts.RetryDelay, Timeout: l.opts.UploadTimeout,
		Clock: l.opts.Clock, Logger: l.log, Stop: func() bool { return l.fencedErr() != nil },
	}
	if err := store.PutRetrying(l.opts.Store, f.key, data, store.PutOptions{}, r); err != nil {
		return &FlushError{Key: f.key, Err: err}
	}
	return nil
}
