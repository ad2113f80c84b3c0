package celltest

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"

	"github.com/cellb/cellb/core/cell"
)

// Streamed responses (issue 22, point 3): a handler that flushes is
// answered before it returns, and each chunk leaves only once the commits
// made before it are durable.

func streamCases() []caseDef {
	return []caseDef{
		{"output/streamed-response", caseStreamedResponse},
		{"output/streamed-chunk-not-sent-on-failure", caseStreamedChunkNotSent},
	}
}

// streamer answers "one\n" (flushed), waits for step1, writes a KV pair,
// answers "two\n" (flushed), waits for step2 and returns.
type streamer struct {
	st           *cell.State
	step1, step2 chan struct{}
}

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := w.(http.Flusher)
	w.Write([]byte("one\n"))
	f.Flush()
	<-s.step1
	if err := s.st.KV().Put(ctx, "seen", 1); err != nil {
		return
	}
	w.Write([]byte("two\n"))
	f.Flush()
	<-s.step2
}

type streamRig struct {
	log          *ControlLog
	s            *cell.Stub[*streamer]
	step1, step2 chan struct{}
}

func (c *checkT) streamRig() *streamRig {
	g := &streamRig{log: c.controlLog(), step1: make(chan struct{}), step2: make(chan struct{})}
	rt := c.runtime(rtConfig{log: g.log})
	ns, err := cell.Register(rt, "Streamer", func(ctx context.Context, st *cell.State) (*streamer, error) {
		return &streamer{st, g.step1, g.step2}, nil
	})
	if err != nil {
		c.fatalf("Register(Streamer): %v", err)
	}
	g.s = ns.Get(ns.IDFromName("s"))
	c.defer_(func() {
		for _, ch := range []chan struct{}{g.step1, g.step2} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	return g
}

type line struct {
	s   string
	err error
}

// readLines reads the body's lines in a goroutine, one per receive.
func readLines(br *bufio.Reader) <-chan line {
	ch := make(chan line)
	go func() {
		for {
			s, err := br.ReadString('\n')
			ch <- line{s, err}
			if err != nil {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// The response starts and its first chunk arrives while the handler still
// runs; a chunk written after a write leaves only once that write is
// durable; the handler's return ends the body.
func caseStreamedResponse(c *checkT) {
	g := c.streamRig()
	type fetched struct {
		resp *http.Response
		err  error
	}
	fc := make(chan fetched, 1)
	go func() {
		resp, err := g.s.Fetch(c.ctx, httptest.NewRequest("GET", "/", nil))
		fc <- fetched{resp, err}
	}()
	f := wait(c, fc, "the streamed response to start while its handler runs")
	if f.err != nil {
		c.fatalf("Fetch: %v", f.err)
	}
	defer f.resp.Body.Close()
	if f.resp.StatusCode != 200 || f.resp.ContentLength != -1 {
		c.errorf("streamed response: status %d, length %d; want 200, -1", f.resp.StatusCode, f.resp.ContentLength)
	}
	lines := readLines(bufio.NewReader(f.resp.Body))
	if l := wait(c, lines, "the first chunk before the handler returns"); l.s != "one\n" {
		c.fatalf("first chunk %q (err %v), want %q", l.s, l.err, "one\n")
	}
	g.log.Hold()
	close(g.step1)
	c.eventually("the handler's write to reach the log", func() bool { return g.log.Pending() > 0 })
	if !quiet(lines, settle) {
		c.errorf("a chunk left before the write made before it was durable")
	}
	g.log.Release()
	if l := wait(c, lines, "the second chunk once the write is durable"); l.s != "two\n" {
		c.errorf("second chunk %q (err %v), want %q", l.s, l.err, "two\n")
	}
	close(g.step2)
	if l := wait(c, lines, "the end of the body"); l.s != "" || l.err == nil || l.err.Error() != "EOF" {
		c.errorf("after the handler returned the body gave %q, %v; want EOF", l.s, l.err)
	}
}

// A chunk written after a write whose commit fails never leaves: the body
// ends with the reset instead.
func caseStreamedChunkNotSent(c *checkT) {
	g := c.streamRig()
	resp, err := g.s.Fetch(c.ctx, httptest.NewRequest("GET", "/", nil))
	if err != nil {
		c.fatalf("Fetch: %v", err)
	}
	defer resp.Body.Close()
	lines := readLines(bufio.NewReader(resp.Body))
	if l := wait(c, lines, "the first chunk"); l.s != "one\n" {
		c.fatalf("first chunk %q (err %v), want %q", l.s, l.err, "one\n")
	}
	g.log.Hold()
	close(g.step1)
	c.eventually("the handler's write to reach the log", func() bool { return g.log.Pending() > 0 })
	g.log.Fail(errors.New("injected durability failure"))
	l := wait(c, lines, "the body after the failed commit")
	if l.s != "" || !isBroken(l.err) {
		c.errorf("after a failed commit the body gave %q, %v; want no chunk and a BrokenObjectError", l.s, l.err)
	}
	g.log.Release()
}
