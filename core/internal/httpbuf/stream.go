package httpbuf

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// Stream is an http.ResponseWriter and http.Flusher that keeps the answer
// in memory until it is flushed, and from then on hands it over through a
// pipe, chunk by chunk: a streamed response whose memory is bounded by the
// chunk, not the response. The runtime's Fetch (each chunk waits for the
// output gate: Gate) and the host's forwarding of a streamed answer both
// use it.
//
// One goroutine writes (the handler, then whoever calls Finish); another
// waits for Head or for the writer to finish, then reads the response.
type Stream struct {
	// Limit, when > 0, is the chunk: a Write that would buffer more flushes
	// first, and one at least that long goes through on its own.
	Limit int
	// Gate, when set, runs every send (the head and each chunk); it may
	// wait first, and its error fails the Write (a Flush keeps it, and
	// later writes fail with it).
	Gate func(send func() error) error
	// Sniff gives a response without a Content-Type the one net/http would
	// have sent, from its first bytes.
	Sniff bool

	responseHead
	buf        bytes.Buffer
	started    bool // the head went out: the rest goes through the pipe
	sentHeader http.Header
	err        error
	head       chan struct{}
	pr         *io.PipeReader
	pw         *io.PipeWriter
}

// NewStream returns an empty Stream.
func NewStream() *Stream {
	pr, pw := io.Pipe()
	return &Stream{responseHead: responseHead{header: http.Header{}}, head: make(chan struct{}), pr: pr, pw: pw}
}

func (s *Stream) Write(p []byte) (int, error) {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	if s.err != nil {
		return 0, s.err
	}
	if s.Limit > 0 && s.buf.Len()+len(p) > s.Limit {
		if err := s.flush(); err != nil {
			return 0, err
		}
		if len(p) >= s.Limit {
			// Sent as it is: no copy of a large write.
			if err := s.send(p); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return s.buf.Write(p)
}

// Flush sends the head, if it has not gone yet, and what is buffered.
func (s *Stream) Flush() {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	if s.err == nil {
		_ = s.flush()
	}
}

// FlushError is Flush with its error (http.ResponseController uses it).
func (s *Stream) FlushError() error {
	s.Flush()
	return s.err
}

func (s *Stream) flush() error {
	b := s.buf.Bytes()
	err := s.send(b)
	s.buf.Reset()
	return err
}

// send starts the response, if it has not started, and writes p to the
// pipe, through Gate.
func (s *Stream) send(p []byte) error {
	if s.started && len(p) == 0 {
		return nil
	}
	do := func() error {
		if !s.started {
			if s.Sniff && s.header.Get("Content-Type") == "" && len(p) > 0 {
				s.header.Set("Content-Type", http.DetectContentType(p))
			}
			s.started = true
			s.sentHeader = s.header.Clone()
			close(s.head)
		}
		if len(p) == 0 {
			return nil
		}
		_, err := s.pw.Write(p)
		return err
	}
	var err error
	if s.Gate != nil {
		err = s.Gate(do)
	} else {
		err = do()
	}
	if err != nil && s.err == nil {
		s.err = err
		if s.started {
			// The reader learns it now, not when the writer is done.
			s.pw.CloseWithError(err)
		}
	}
	return err
}

// Err is the error that failed a send, if any: the answer is then
// incomplete and must not be handed over as a whole one.
func (s *Stream) Err() error { return s.err }

// Head is closed once the response started: from then on StreamResponse
// is the answer, and Finish ends its body.
func (s *Stream) Head() <-chan struct{} { return s.head }

// Started reports whether the response started (the writer's goroutine,
// or after Head or Finish).
func (s *Stream) Started() bool { return s.started }

// Finish ends the answer: for a response that started, it sends what is
// still buffered (not through Gate: the caller has passed the gate for
// the whole answer) unless err is set, and ends the body with err (nil:
// a clean end). For one that did not start it does nothing: Response is
// the answer.
func (s *Stream) Finish(err error) {
	if !s.started {
		return
	}
	if err == nil && s.err == nil && s.buf.Len() > 0 {
		_, err = s.pw.Write(s.buf.Bytes())
		s.buf.Reset()
	}
	if err == nil {
		err = s.err
	}
	s.pw.CloseWithError(err)
}

// Response is the whole answer of a response that did not start, as
// Buffer.Response gives it.
func (s *Stream) Response(req *http.Request) *http.Response {
	b := &Buffer{responseHead: s.responseHead, body: *bytes.NewBuffer(s.buf.Bytes())}
	return b.Response(req, s.Sniff)
}

// StreamResponse is the answer of a response that started: its body reads
// the chunks as they are sent, and fails with Finish's error. Closing it
// makes the writer's next chunk fail.
func (s *Stream) StreamResponse(req *http.Request) *http.Response {
	status := s.status
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        s.sentHeader,
		Body:          s.pr,
		ContentLength: -1,
		Request:       req,
	}
}

// CopyFlushed copies body to w, flushing w after each read, so a streamed
// body goes on as it comes. It returns body's error, if any but EOF (w
// then holds part of the body), or nil when w's client went away.
func CopyFlushed(w http.ResponseWriter, body io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			_ = rc.Flush()
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
