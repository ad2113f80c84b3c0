package ltxlog

import "github.com/cellb/cellb/core/ltx"

// coalescer batches a restore's page writes and hands them to a writer
// goroutine: pages arrive in ascending order within each file, so
// consecutive ones are gathered into one large write instead of one system
// call per page, and the next batch is decoded while the previous one is
// being written (two buffers take turns).
type coalescer struct {
	sink  ltx.Sink
	buf   []byte
	off   int64 // file offset of buf[0]
	todo  chan batch
	free  chan []byte
	done  chan error // the writer's first error, once it stops
	err   error
	alive bool
}

type batch struct {
	data []byte
	off  int64
}

// coalesceBytes is one batch. 1 MiB writes cost no more time than 4 MiB
// ones on the 47 MiB benchmark (issue 13) and hold 6 MiB less: two
// batches are most of what a restore holds.
const coalesceBytes = 1 << 20

func newCoalescer(s ltx.Sink) *coalescer {
	c := &coalescer{sink: s, todo: make(chan batch, 1), free: make(chan []byte, 2), done: make(chan error, 1), alive: true}
	c.free <- make([]byte, 0, coalesceBytes)
	c.buf = make([]byte, 0, coalesceBytes)
	go c.writer()
	return c
}

func (c *coalescer) writer() {
	var err error
	for b := range c.todo {
		if err == nil {
			_, err = c.sink.WriteAt(b.data, b.off)
		}
		c.free <- b.data[:0]
	}
	c.done <- err
}

func (c *coalescer) WriteAt(p []byte, off int64) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(c.buf) > 0 && (off != c.off+int64(len(c.buf)) || len(c.buf)+len(p) > cap(c.buf)) {
		c.send()
	}
	if len(c.buf) == 0 {
		c.off = off
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// send hands the current batch to the writer and takes a free buffer.
func (c *coalescer) send() {
	c.todo <- batch{data: c.buf, off: c.off}
	c.buf = <-c.free
}

// wait writes what is buffered and waits for the writer to finish.
func (c *coalescer) wait() error {
	if !c.alive {
		return c.err
	}
	if len(c.buf) > 0 {
		c.send()
	}
	close(c.todo)
	c.alive = false
	if err := <-c.done; err != nil && c.err == nil {
		c.err = err
	}
	return c.err
}

// Truncate is called by the image between files (a shrinking chain) and at
// the end; it drains the writer first, then restarts it.
func (c *coalescer) Truncate(size int64) error {
	if err := c.wait(); err != nil {
		return err
	}
	if err := c.sink.Truncate(size); err != nil {
		c.err = err
		return err
	}
	c.todo, c.done, c.alive = make(chan batch, 1), make(chan error, 1), true
	go c.writer()
	return nil
}

// close stops the writer; the restore ends here, successful or not.
func (c *coalescer) close() error { return c.wait() }
