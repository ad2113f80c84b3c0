package cellbtest

import (
	"context"
	"sync"

	"github.com/cellb/cellb/core/lease"
)

// epochLease grants every cell at once, as lease.None does, but under a
// new epoch each time (1, 2, …, per node), so an object's restart is a new
// session as on a real node: State.RestoreBookmarkOnNextSession, which
// lease.None refuses, works. The local files stay the primary copy.
type epochLease struct {
	mu    sync.Mutex
	epoch uint64
}

func (l *epochLease) TryAcquire(ctx context.Context, cellKey string) (lease.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch++
	return &epochGrant{epoch: l.epoch, lost: make(chan struct{})}, nil
}

type epochGrant struct {
	epoch uint64
	once  sync.Once
	lost  chan struct{}
	mu    sync.Mutex
	err   error
}

func (g *epochGrant) Epoch() uint64         { return g.epoch }
func (g *epochGrant) BucketWins() bool      { return false }
func (g *epochGrant) Lost() <-chan struct{} { return g.lost }
func (g *epochGrant) CheckWrite() error     { return g.Err() }

func (g *epochGrant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *epochGrant) Release(ctx context.Context) error {
	g.once.Do(func() {
		g.mu.Lock()
		g.err = lease.ErrReleased
		g.mu.Unlock()
		close(g.lost)
	})
	return nil
}
