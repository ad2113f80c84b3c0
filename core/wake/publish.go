package wake

import (
	"context"
	"fmt"
	"time"

	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/fleet"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/wakeport"
)

// publishTimeout bounds one bucket call of a publication.
const publishTimeout = 30 * time.Second

// Publish writes the wake entry of a durable alarm change and then
// retires the entries it replaces. The returned Durable resolves once the
// entry is written and the commit is durable — what celld makes an
// alarm-setting reply wait for; retirement follows in the background.
func (s *Service) Publish(p wakeport.Publication, durable durability.Durable) durability.Durable {
	f := durability.NewFuture()
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		s.publish(p, durable, f)
	}()
	return f
}

func (s *Service) publish(p wakeport.Publication, durable durability.Durable, f *durability.Future) {
	id := Identity{Epoch: p.Epoch, Seq: p.Seq}
	if p.AtMs != nil {
		key := EntryKey(p.Cell, *p.AtMs, id)
		body := Entry{Cell: p.Cell, DueMs: *p.AtMs, Identity: id}.Encode()
		if err := s.putWithRetries(key, body); err != nil {
			f.Resolve(fmt.Errorf("wake: publish the alarm of %s: %w", p.Cell, err))
			return
		}
		s.remember(p.Cell, written{key: key, id: id})
	}
	<-durable.Done()
	if err := durable.Err(); err != nil {
		f.Resolve(err)
		return
	}
	f.Resolve(nil)
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := s.retire(ctx, p.Cell, Retired{Identity: id, AtMs: p.AtMs}); err != nil {
		// Only tidiness is lost: an unretired entry wakes the cell once
		// more, and the cell's row says there is nothing to run.
		s.log.Warn("wake: retiring older entries failed", "cell", p.Cell, "identity", id.String(), "err", err)
	}
}

func (s *Service) putWithRetries(key string, body []byte) error {
	err := store.PutRetrying(s.opts.Store, key, body, store.PutOptions{}, store.Retry{
		Retries: s.opts.Retries, Delay: s.opts.RetryDelay, Timeout: publishTimeout,
		Clock: s.clk, Logger: s.log,
	})
	if err != nil {
		s.log.Warn("wake: entry write failed", "key", key, "err", err)
	}
	return err
}

// retire records ours as the cell's newest installation, once own.json
// still names this node at the installation's epoch (a node that lost
// the cell must not retire the new owner's entries), then deletes the
// entries of this node the retirement makes obsolete.
func (s *Service) retire(ctx context.Context, cellKey string, ours Retired) error {
	own, err := s.readOwn(ctx, cellKey)
	if err != nil {
		return err
	}
	if !MayRetire(s.opts.Node, ours.Identity, own) {
		s.log.Debug("wake: not retiring: the cell's ownership moved on", "cell", cellKey, "identity", ours.Identity.String())
		return nil
	}
	key := layout.WakeRetiredKey(cellKey)
	var current Retired
	for attempt := 0; ; attempt++ {
		stored, ver, err := s.readRetired(ctx, cellKey)
		if err != nil {
			return err
		}
		write, err := DecideRetire(stored, ours)
		if err != nil {
			return err
		}
		if !write {
			current = *stored
			break
		}
		cond := store.IfAbsent
		if stored != nil {
			cond = store.IfVersion(ver)
		}
		_, err = s.opts.Store.Put(ctx, key, ours.Encode(), store.PutOptions{Condition: cond})
		if err == nil {
			current = ours
			break
		}
		if !store.IsPreconditionFailed(err) || attempt >= 2 {
			return fmt.Errorf("write %s: %w", key, err)
		}
	}
	return s.deleteObsolete(ctx, cellKey, current)
}

// written is an entry this node wrote.
type written struct {
	key string
	id  Identity
}

// remember notes an entry this node wrote.
func (s *Service) remember(cellKey string, ref written) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published[cellKey] = append(s.published[cellKey], ref)
}

// deleteObsolete deletes the entries this node wrote for the cell that r
// makes obsolete, and forgets them.
func (s *Service) deleteObsolete(ctx context.Context, cellKey string, r Retired) error {
	s.mu.Lock()
	var gone, kept []written
	for _, ref := range s.published[cellKey] {
		if Obsolete(ref.id, r) {
			gone = append(gone, ref)
		} else {
			kept = append(kept, ref)
		}
	}
	if len(kept) == 0 {
		delete(s.published, cellKey)
	} else {
		s.published[cellKey] = kept
	}
	s.mu.Unlock()
	var first error
	for _, ref := range gone {
		if err := s.opts.Store.Delete(ctx, ref.key); err != nil && first == nil {
			first = fmt.Errorf("delete %s: %w", ref.key, err)
		}
	}
	return first
}

// readOwn reads the cell's ownership record; nil when there is none.
func (s *Service) readOwn(ctx context.Context, cellKey string) (*layout.OwnRecord, error) {
	own, _, err := fleet.ReadOwn(ctx, s.opts.Store, cellKey)
	return own, err
}

// readRetired reads the cell's retirement; nil when there is none.
func (s *Service) readRetired(ctx context.Context, cellKey string) (*Retired, store.Version, error) {
	key := layout.WakeRetiredKey(cellKey)
	obj, err := store.GetData(ctx, s.opts.Store, key)
	if store.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	r, err := DecodeRetired(key, obj.Data)
	if err != nil {
		return nil, "", err
	}
	return &r, obj.Version, nil
}
