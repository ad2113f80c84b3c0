package celltest

import (
	"context"
	"sync"
	"time"

	"github.com/cellb/cellb/core/durability"
)

// ControlLog is a durability.Log whose durability the test decides. While
// held (Hold), commits stay pending until Release or Fail; otherwise each
// commit becomes durable after Delay, strictly in order. It counts the
// commits appended and made durable, across all cells, so a test can
// compare what a reply saw with what was durable when it arrived.
type ControlLog struct {
	// NeedsImages makes every cell log ask for images (exercising the
	// runtime's commit-time Serialize when the driver captures no pages).
	NeedsImages bool

	mu       sync.Mutex
	hold     bool
	delay    time.Duration
	pending  []*durability.Future
	appended uint64
	durable  uint64
	failed   uint64
	images   int
	closed   []bool // Close's final flag, per cell log closed
	commits  map[string][]durability.Commit
	opens    map[string][]durability.OpenRequest
	wake     chan struct{}
	stopped  bool
}

// Stop releases every pending commit and ends the log's background work;
// later commits become durable at once.
func (l *ControlLog) Stop() {
	l.Release()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// NewControlLog returns a log that makes commits durable at once until
// told otherwise.
func NewControlLog() *ControlLog { return &ControlLog{} }

// Hold keeps every commit from now on pending until Release or Fail.
func (l *ControlLog) Hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hold = true
}

// SetDelay stops holding and makes each commit durable d after the
// previous one became durable, in order.
func (l *ControlLog) SetDelay(d time.Duration) {
	l.mu.Lock()
	l.hold = false
	l.delay = d
	l.mu.Unlock()
	l.kick()
}

// Release makes every pending commit durable (and stops holding).
func (l *ControlLog) Release() {
	l.mu.Lock()
	l.hold = false
	l.mu.Unlock()
	l.kick()
}

// Fail makes every pending commit fail with err.
func (l *ControlLog) Fail(err error) {
	l.mu.Lock()
	p := l.pending
	l.pending = nil
	l.failed += uint64(len(p))
	l.mu.Unlock()
	for _, f := range p {
		f.Resolve(err)
	}
}

// Pending is the number of commits not yet resolved.
func (l *ControlLog) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// Appended is the number of commits handed to the log so far.
func (l *ControlLog) Appended() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appended
}

// Durable is the number of commits made durable so far.
func (l *ControlLog) Durable() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

// Images is the number of commits that carried a whole image.
func (l *ControlLog) Images() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.images
}

func (l *ControlLog) kick() {
	l.mu.Lock()
	if l.stopped {
		p := l.pending
		l.pending = nil
		l.durable += uint64(len(p))
		l.mu.Unlock()
		for _, f := range p {
			f.Resolve(nil)
		}
		return
	}
	if l.wake == nil {
		l.wake = make(chan struct{}, 1)
		go l.pump(l.wake)
	}
	// Signal under the lock, so Stop cannot close the channel in between.
	select {
	case l.wake <- struct{}{}:
	default:
	}
	l.mu.Unlock()
}

// pump resolves pending commits in order whenever the log is not held.
func (l *ControlLog) pump(wake chan struct{}) {
	for range wake {
		for {
			l.mu.Lock()
			if l.hold || len(l.pending) == 0 {
				l.mu.Unlock()
				break
			}
			d := l.delay
			l.mu.Unlock()
			if d > 0 {
				time.Sleep(d)
			}
			l.mu.Lock()
			if l.hold || len(l.pending) == 0 {
				l.mu.Unlock()
				break
			}
			f := l.pending[0]
			l.pending = l.pending[1:]
			l.durable++
			l.mu.Unlock()
			f.Resolve(nil)
		}
	}
}

// Open starts one cell's log.
func (l *ControlLog) Open(ctx context.Context, req durability.OpenRequest) (durability.CellLog, error) {
	l.mu.Lock()
	if l.opens == nil {
		l.opens = map[string][]durability.OpenRequest{}
	}
	req.Conn = nil // the request is kept after the connection closes
	l.opens[req.Cell] = append(l.opens[req.Cell], req)
	l.mu.Unlock()
	return &controlCellLog{l: l, key: req.Cell}, nil
}

type controlCellLog struct {
	l   *ControlLog
	key string
}

// Closes lists the final flag of every cell log closed so far, in order.
func (l *ControlLog) Closes() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.closed...)
}

// Opens returns the requests one cell's logs were opened with, in order
// (without their Conn).
func (l *ControlLog) Opens(cellKey string) []durability.OpenRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]durability.OpenRequest(nil), l.opens[cellKey]...)
}

// Commits returns the commits handed to the log for one cell, in order.
func (l *ControlLog) Commits(cellKey string) []durability.Commit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]durability.Commit(nil), l.commits[cellKey]...)
}

func (c *controlCellLog) NeedsImage() bool { return c.l.NeedsImages }

func (c *controlCellLog) Append(cm durability.Commit) durability.Durable {
	l := c.l
	f := durability.NewFuture()
	l.mu.Lock()
	if l.commits == nil {
		l.commits = map[string][]durability.Commit{}
	}
	l.commits[c.key] = append(l.commits[c.key], cm)
	l.appended++
	if cm.Image != nil {
		l.images++
	}
	l.pending = append(l.pending, f)
	l.mu.Unlock()
	l.kick()
	return f
}

func (c *controlCellLog) Close(ctx context.Context, final bool) error {
	l := c.l
	l.mu.Lock()
	l.closed = append(l.closed, final)
	l.mu.Unlock()
	return nil
}
