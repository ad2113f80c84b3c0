package nodelog

import (
	"context"
	"sync"
)

// checker shares reads of the node record among everyone who needs one
// that started after a given moment: at most one read is in flight and one
// queued. A caller joins the queued read (which starts once the one in
// flight ends, so after the call) or, when none is in flight, starts one;
// it never joins a read already in flight, which may have started before
// the write it must follow.
type checker struct {
	check func(ctx context.Context) error

	mu      sync.Mutex
	running *round
	next    *round
}

type round struct {
	done chan struct{}
	err  error
}

// after returns the outcome of a read that started after the call.
func (c *checker) after(ctx context.Context) error {
	c.mu.Lock()
	var r *round
	if c.running == nil {
		r = &round{done: make(chan struct{})}
		c.running = r
		c.mu.Unlock()
		go c.run(r)
	} else {
		if c.next == nil {
			c.next = &round{done: make(chan struct{})}
		}
		r = c.next
		c.mu.Unlock()
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run reads for r, then for the round queued meanwhile, until none is.
func (c *checker) run(r *round) {
	for r != nil {
		r.err = c.check(context.Background())
		close(r.done)
		c.mu.Lock()
		r, c.next = c.next, nil
		c.running = r
		c.mu.Unlock()
	}
}
