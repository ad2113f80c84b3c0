package wake

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/metrics"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wakeport"
)

// Page size and concurrency of scans, as celld uses them (§7.4).
const (
	cleanupPage   = 128
	cellsAtOnce   = 8
	scanCallLimit = 30 * time.Second
)

// Run checks that the bucket's wake index is ready (see Prepare), then
// polls until ctx ends or Close: every PollInterval it wakes
// this node's cells with due entries, and every Tick it contends for the
// waker role and, while elected, wakes due cells nobody live owns and
// deletes obsolete entries. It returns the format error that forbids
// starting, if any, before polling begins; polling errors are logged.
func (s *Service) Run(ctx context.Context, w wakeport.Waker) error {
	cctx, cancel := context.WithTimeout(ctx, scanCallLimit)
	err := CheckReady(cctx, s.opts.Store)
	cancel()
	if err != nil {
		return err
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx, w)
	return nil
}

// Close stops polling and waits for publications in flight (until ctx
// ends).
func (s *Service) Close(ctx context.Context) error {
	if s.stop != nil {
		s.stop()
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	idle := make(chan struct{})
	go func() { s.inflight.Wait(); close(idle) }()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) loop(ctx context.Context, w wakeport.Waker) {
	defer close(s.done)
	poll := s.clk.NewTimer(0)
	tick := s.clk.NewTimer(0)
	defer poll.Stop()
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			s.tickOnce(ctx, w)
			tick.Reset(s.opts.Tick)
		case <-poll.C():
			err := s.pollOnce(ctx, w, false)
			s.metrics.Poll(ctx, metrics.RoleOwner, err)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("wake: scanning due entries failed", "err", err)
			}
			poll.Reset(s.opts.PollInterval)
		}
	}
}

// tickOnce is one waker-role period: contend for the role, and while
// holding it scan for every due cell and clean obsolete entries.
func (s *Service) tickOnce(ctx context.Context, w wakeport.Waker) {
	elected, err := s.elect(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("wake: waker election failed", "err", err)
	}
	if !elected {
		return
	}
	err = s.pollOnce(ctx, w, true)
	s.metrics.Poll(ctx, metrics.RoleWaker, err)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("wake: waker scan failed", "err", err)
	}
	if err := s.cleanup(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("wake: cleaning obsolete entries failed", "err", err)
	}
}

// Elected reports whether this node held the waker role at its last
// election.
func (s *Service) Elected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.elected
}

// elect claims, renews or takes over the waker role when §7.4 allows.
func (s *Service) elect(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, scanCallLimit)
	defer cancel()
	now := uint64(s.clk.Now().UnixMilli())
	ttl := uint64(RoleTTL(s.opts.Tick).Milliseconds())
	var rec *WakerRecord
	var ver store.Version
	obj, err := store.GetData(ctx, s.opts.Store, layout.WakerKey)
	switch {
	case store.IsNotFound(err):
	case err != nil:
		s.setElected(false)
		return false, err
	default:
		ver = obj.Version
		if r, derr := DecodeWaker(obj.Data); derr == nil {
			rec = &r
		} else {
			// celld treats a record it cannot read as expired: take the
			// role over it (If-Match on what was read).
			s.log.Warn("wake: unreadable waker record; taking the role over it", "err", derr)
			rec = &WakerRecord{}
		}
	}
	mine := WakerRecord{Node: s.opts.Node, ExpiresMs: now + ttl}
	var cond store.Condition
	switch DecideElection(rec, s.opts.Node, now) {
	case Claim:
		cond = store.IfAbsent
	case Renew, TakeOver:
		cond = store.IfVersion(ver)
	default:
		s.setElected(false)
		return false, nil
	}
	if _, err := s.opts.Store.Put(ctx, layout.WakerKey, mine.Encode(), store.PutOptions{Condition: cond}); err != nil {
		s.setElected(false)
		if store.IsPreconditionFailed(err) {
			return false, nil // another node moved first
		}
		return false, err
	}
	s.setElected(true)
	return true, nil
}

func (s *Service) setElected(v bool) {
	s.mu.Lock()
	s.elected = v
	s.mu.Unlock()
}

// pollOnce wakes the cells whose entries are due and not obsolete: those
// this node owns, and, when asWaker, those nobody live owns.
func (s *Service) pollOnce(ctx context.Context, w wakeport.Waker, asWaker bool) error {
	now := s.clk.Now().UnixMilli()
	minutes, err := s.listPrefixes(ctx, layout.WakeEntriesPrefix)
	if err != nil {
		return err
	}
	byCell := map[string][]Identity{}
	for _, prefix := range DuePrefixes(minutes, now) {
		err := s.listObjects(ctx, prefix, func(keys []string) error {
			for _, key := range keys {
				ref, err := ParseEntryKey(key)
				if err != nil {
					continue // malformed entries are never ours to act on
				}
				byCell[ref.Cell] = append(byCell[ref.Cell], ref.Identity)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	cells := make([]string, 0, len(byCell))
	for c := range byCell {
		cells = append(cells, c)
	}
	sort.Strings(cells)
	return s.eachCell(ctx, cells, func(ctx context.Context, cellKey string) error {
		retired, _, err := s.readRetired(ctx, cellKey)
		if err != nil {
			return err
		}
		live := false
		for _, id := range byCell[cellKey] {
			if retired == nil || !Obsolete(id, *retired) {
				live = true
			}
		}
		if !live {
			return nil
		}
		own, lease, err := s.readOwner(ctx, cellKey)
		if err != nil {
			return err
		}
		if !DecideWake(s.opts.Node, asWaker, own, lease, uint64(now)) {
			return nil
		}
		if err := w.Wake(ctx, cellKey); err != nil {
			s.log.Info("wake: could not wake a cell with a due alarm", "cell", cellKey, "err", err)
			return nil
		}
		s.log.Debug("wake: woke a cell with a due alarm", "cell", cellKey)
		return nil
	})
}

// cleanup deletes every obsolete entry in the index, a page at a time.
func (s *Service) cleanup(ctx context.Context) error {
	return s.listObjects(ctx, layout.WakeEntriesPrefix, func(keys []string) error {
		byCell := map[string][]EntryRef{}
		var cells []string
		for _, key := range keys {
			ref, err := ParseEntryKey(key)
			if err != nil {
				continue // never deleted: not an entry this format defines
			}
			if _, ok := byCell[ref.Cell]; !ok {
				cells = append(cells, ref.Cell)
			}
			byCell[ref.Cell] = append(byCell[ref.Cell], ref)
		}
		return s.eachCell(ctx, cells, func(ctx context.Context, cellKey string) error {
			retired, _, err := s.readRetired(ctx, cellKey)
			if err != nil || retired == nil {
				return err
			}
			for _, ref := range byCell[cellKey] {
				if Obsolete(ref.Identity, *retired) {
					if err := s.opts.Store.Delete(ctx, ref.Key()); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

// readOwner reads a cell's ownership record and its owner's node lease
// (each nil when absent).
func (s *Service) readOwner(ctx context.Context, cellKey string) (*layout.OwnRecord, *layout.NodeLease, error) {
	own, err := s.readOwn(ctx, cellKey)
	if err != nil || own == nil || own.Node == "" {
		return own, nil, err
	}
	lease, _, err := fleet.ReadNodeLease(ctx, s.opts.Store, own.Node)
	return own, lease, err
}

// eachCell runs fn for the cells, cellsAtOnce at a time, and returns the
// first error.
func (s *Service) eachCell(ctx context.Context, cells []string, fn func(context.Context, string) error) error {
	sem := make(chan struct{}, cellsAtOnce)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, c := range cells {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			cctx, cancel := context.WithTimeout(ctx, scanCallLimit)
			defer cancel()
			if err := fn(cctx, c); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%s: %w", c, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// listPrefixes lists the delimiter prefixes under prefix, every page.
func (s *Service) listPrefixes(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	token := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, scanCallLimit)
		page, err := s.opts.Store.List(cctx, store.ListOptions{Prefix: prefix, Delimiter: "/", Token: token})
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, page.Prefixes...)
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}

// listObjects hands fn the keys under prefix, one page of cleanupPage at
// a time.
func (s *Service) listObjects(ctx context.Context, prefix string, fn func([]string) error) error {
	token := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, scanCallLimit)
		page, err := s.opts.Store.List(cctx, store.ListOptions{Prefix: prefix, Token: token, Limit: cleanupPage})
		cancel()
		if err != nil {
			return err
		}
		keys := make([]string, len(page.Objects))
		for i, o := range page.Objects {
			keys[i] = o.Key
		}
		if err := fn(keys); err != nil {
			return err
		}
		if page.NextToken == "" {
			return nil
		}
		token = page.NextToken
	}
}
