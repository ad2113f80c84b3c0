package lease

import (
	"context"
	"sync"
)

// None grants every cell at once: one process owns its local files, which
// are the primary copy. Epoch is always 0.
type None struct{}

func (None) TryAcquire(ctx context.Context, cellKey string) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &noneGrant{lost: make(chan struct{})}, nil
}

type noneGrant struct {
	once sync.Once
	lost chan struct{}
	mu   sync.Mutex
	err  error
}

func (g *noneGrant) Epoch() uint64         { return 0 }
func (g *noneGrant) BucketWins() bool      { return false }
func (g *noneGrant) Lost() <-chan struct{} { return g.lost }
func (g *noneGrant) CheckWrite() error     { return g.Err() }

func (g *noneGrant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

func (g *noneGrant) Release(ctx context.Context) error {
	g.once.Do(func() {
		g.mu.Lock()
		g.err = ErrReleased
		g.mu.Unlock()
		close(g.lost)
	})
	return nil
}
