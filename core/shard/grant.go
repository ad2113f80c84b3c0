package shard

import (
	"context"
	"errors"
	"sync"

	"github.com/cellb/cellb/core/lease"
)

// grant is one acquisition of one cell under its shard's lock.
type grant struct {
	l     *Lease
	shard int
	cell  string
	epoch uint64

	once sync.Once
	lost chan struct{}
	mu   sync.Mutex
	err  error
}

func (g *grant) Epoch() uint64 { return g.epoch }

var _ lease.EpochRecorder = (*grant)(nil)

// RecordEpoch writes the grant's epoch to the shard file and syncs it, the
// first time the grant's holder writes (see lease.EpochRecorder).
func (g *grant) RecordEpoch(ctx context.Context) error { return g.l.record(g) }

// BucketWins is false: on one host the local database is the primary copy.
func (g *grant) BucketWins() bool { return false }

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

// CheckWrite accepts writes while the grant holds. An OS lock does not
// lapse while its process lives, so only Release, Close or a newer grant of
// the same cell end a grant, and each of them marks it lost first.
func (g *grant) CheckWrite() error {
	err := g.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lease.ErrReleased):
		return err
	}
	return &lease.LeaseLapsedError{Cell: g.cell}
}

// Release ends the grant; with the shard's last grant the shard's lock goes
// too, so another process may take the cell at once.
func (g *grant) Release(ctx context.Context) error {
	return g.l.release(g)
}
