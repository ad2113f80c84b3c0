package host

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/httperr"
	"github.com/cellb/cellb/core/internal/httpbuf"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// Routing for every class (docs/embedding.md, "Routing").
//
// Three paths reach a cell's owner:
//
//   - Stub.Fetch is sent alone: the runtime's Router (router, below) sends
//     the Fetch's request to FetchPath/<class>/<id>/<path> on the owner's
//     peer port or local socket, where the owner runs that object's Fetch
//     and nothing else. This works with or without an incoming request.
//   - A typed method call (cell.RegisterMethod) is sent alone the same way,
//     to CallPath/<class>/<id>/<method> (call.go).
//   - A typed call (cell.Call, Call) cannot be sent: it is a Go function.
//     Every request the host serves carries a slot in its context; when
//     the first cell call of the request is refused because another node
//     or process owns the cell, nothing has been written and no other cell
//     call of the request ran here, the host sends the whole request
//     (body captured up to peer.MaxBody) to the owner, writes the owner's
//     answer, and discards what the handler writes afterwards (the call
//     returns ErrAnsweredByOwner). Otherwise the call fails with a
//     *NotRoutedError saying why.
//
// A request or Fetch that arrives forwarded (peer.HeaderForwarded) is never
// forwarded again: refused here, it is answered "not applied", so the
// sender looks at the cell's owner again. A Fetch the handler of a
// forwarded request makes after another of its calls ran here is a call of
// its own: it is sent alone to its owner, as anywhere else.

// FetchPath prefixes the URLs of Fetches sent to a cell's owner. They are
// served on the peer port and the local socket only, never on Handler.
const FetchPath = "/_cellb/v1/fetch/"

// headerCellName carries the name of an id made by IDFromName (URL path
// escaped), so the owner activates the cell with its name recorded.
const headerCellName = "X-Cellb-Cell-Name"

// ErrAnsweredByOwner is what a cell call returns inside a request the host
// forwarded whole to its cell's owner: the owner's answer is written, and
// whatever the handler writes from then on is discarded.
var ErrAnsweredByOwner = errors.New("host: the request was forwarded to its cell's owner, which answered it; this handler's answer is discarded")

// Reasons a typed call inside a request is not routed (NotRoutedError).
const (
	reasonNoRequest = "a typed call made outside a request the host serves runs only where its cell is owned"
	reasonRan       = "another cell call of this request already ran (or is running) here, and sending the whole request to the owner would run it again"
	reasonStarted   = "the handler already started its answer, so the owner's answer cannot replace it"
	reasonClaimed   = "an earlier call of this request was sent to (or refused for) another owner"
	reasonNoRoute   = "the owner's address is unknown, or this node forwards no calls (it has no peer listener or local socket)"
)

// reach runs try here and, while the cell is owned elsewhere and the host
// can forward calls, asks gate (nil: allowed) whether the call may go to
// the owner, then sends it with send. When the owner provably did not run
// it, reach looks again until the cell comes free (and runs it here) or
// has a new owner (and sends it there), for at most takeoverWait. sent
// reports that send succeeded: the owner answered.
func (h *Host) reach(ctx context.Context, try func() error, gate, send func(*lease.CellOwnedElsewhereError) error) (sent bool, err error) {
	var deadline time.Time
	for {
		err = try()
		var oe *lease.CellOwnedElsewhereError
		if !errors.As(err, &oe) {
			return false, err
		}
		if h.forward == nil || oe.Addr == "" {
			return false, err
		}
		if gate != nil {
			if gerr := gate(oe); gerr != nil {
				return false, gerr
			}
		}
		ferr := send(oe)
		if ferr == nil {
			return true, nil
		}
		var lost *lease.ShardOwnerLostError
		if errors.As(ferr, &lost) {
			lost.Class, lost.ID = oe.Class, oe.ID
			return false, lost
		}
		var big *peer.BodyTooLargeError
		if errors.As(ferr, &big) {
			return false, ferr
		}
		ferr = &peer.ForwardError{Owned: oe, Err: ferr}
		if !notApplied(ferr) {
			return false, ferr
		}
		if deadline.IsZero() {
			deadline = h.clk.Now().Add(takeoverWait)
		} else if h.clk.Now().After(deadline) {
			return false, ferr
		}
		t := h.clk.NewTimer(retryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C():
		}
	}
}

func isOwnedElsewhere(err error) bool {
	var oe *lease.CellOwnedElsewhereError
	return errors.As(err, &oe)
}

// router is the runtime's cell.Router.
type router struct{ h *Host }

func (rt router) Call(ctx context.Context, class string, id cell.ID, here func() error) error {
	s := rt.h.slotOf(ctx)
	if s == nil {
		err := here()
		var oe *lease.CellOwnedElsewhereError
		var nr *NotRoutedError
		if errors.As(err, &oe) && !errors.As(err, &nr) {
			return &NotRoutedError{Owned: oe, Reason: reasonNoRequest}
		}
		return err
	}
	return s.call(ctx, here)
}

func (rt router) Fetch(ctx context.Context, class string, id cell.ID, req *http.Request, here func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	s := rt.h.slotOf(ctx)
	if s == nil {
		return rt.h.fetch(ctx, class, id, req, here, nil)
	}
	return s.fetch(ctx, class, id, req, here)
}

// fetch runs a Fetch here or sends it alone to the cell's owner (FetchPath).
// gate (nil: allowed) may refuse sending it.
func (h *Host) fetch(ctx context.Context, class string, id cell.ID, req *http.Request, here func(*http.Request) (*http.Response, error), gate func(*lease.CellOwnedElsewhereError) error) (*http.Response, error) {
	var body []byte // read at the first refusal; then every attempt gets a copy
	var resp *http.Response
	attempt := func() (err error) {
		r := req
		if body != nil {
			r = req.WithContext(req.Context())
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		resp, err = here(r)
		return err
	}
	sent, err := h.reach(ctx, attempt, func(oe *lease.CellOwnedElsewhereError) error {
		if gate != nil {
			if err := gate(oe); err != nil {
				return err
			}
		}
		if body == nil {
			b, err := peer.ReadBody(req, peer.MaxBody)
			if err != nil {
				return err
			}
			body = append([]byte{}, b...)
		}
		return nil
	}, func(oe *lease.CellOwnedElsewhereError) error {
		out, err := fetchRequest(ctx, class, id, req, body)
		if err != nil {
			return err
		}
		resp, err = h.forwardFetch(ctx, oe, req, out)
		return err
	})
	if sent {
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// forwardFetch sends a Fetch's request to the owner and returns its
// answer: whole, or, when the owner streams it (peer.HeaderStreamed), as
// soon as it starts, with a body that reads the chunks as they come and
// fails if the owner is lost midway.
func (h *Host) forwardFetch(ctx context.Context, oe *lease.CellOwnedElsewhereError, req, out *http.Request) (*http.Response, error) {
	st := httpbuf.NewStream()
	done := make(chan error, 1)
	go func() {
		err := h.forward(ctx, oe, st, out)
		st.Finish(err)
		done <- err
	}()
	select {
	case <-st.Head():
		return st.StreamResponse(req), nil
	case err := <-done:
		if st.Started() {
			return st.StreamResponse(req), nil
		}
		if err != nil {
			return nil, err
		}
		return st.Response(req), nil
	}
}

// fetchRequest is req addressed to the owner's FetchPath for the object.
func fetchRequest(ctx context.Context, class string, id cell.ID, req *http.Request, body []byte) (*http.Request, error) {
	p := "/"
	q := ""
	if req.URL != nil {
		if ep := req.URL.EscapedPath(); ep != "" {
			p = ep
		}
		q = req.URL.RawQuery
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	u := FetchPath + url.PathEscape(class) + "/" + id.String() + p
	if q != "" {
		u += "?" + q
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	out.Header.Del(headerCellName)
	dropPeerHeaders(out.Header)
	if name := id.Name(); name != "" {
		out.Header.Set(headerCellName, url.PathEscape(name))
	}
	return out, nil
}

// dropPeerHeaders removes the marks of a hop between nodes from a request
// a handler hands on (Stub.ServeHTTP passes its own, forwarded, request):
// the call it makes is a new one, sent once.
func dropPeerHeaders(h http.Header) {
	for k := range h {
		if k == peer.HeaderForwarded || strings.HasPrefix(k, "X-Cellb-Peer-") {
			delete(h, k)
		}
	}
}

// serveFetch runs a Fetch another node or process sent here (FetchPath).
// It runs inside a forwarded request's slot, so a Fetch refused here is
// answered "not applied" and never sent on.
func (h *Host) serveFetch(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, FetchPath)
	class, rest, ok1 := strings.Cut(rest, "/")
	hexID, path, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 {
		httperr.Write(w, httperr.BadInput("a fetch sent to a cell's owner is %s<class>/<id>/<path>", FetchPath))
		return
	}
	ns, err := h.rt.Namespace(class)
	if err != nil {
		httperr.Write(w, httperr.BadInput("%v", err))
		return
	}
	id, err := ns.IDFromString(hexID)
	if err != nil {
		httperr.Write(w, httperr.BadInput("%v", err))
		return
	}
	id = namedID(ns, id, r)
	in := r.Clone(r.Context())
	in.Header.Del(headerCellName)
	u := *r.URL
	u.Path = "/" + path
	u.RawPath = ""
	if r.URL.RawPath != "" {
		// Keep the sender's escaping of the original path.
		if i := strings.Index(r.URL.RawPath, hexID+"/"); i >= 0 {
			u.RawPath = r.URL.RawPath[i+len(hexID):]
		}
	}
	in.URL, in.RequestURI = &u, u.RequestURI()
	resp, err := ns.Get(id).Fetch(r.Context(), in)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if resp.ContentLength < 0 {
		// A streamed answer: the sender copies it through as it comes;
		// one that fails midway is aborted, never ended as complete.
		w.Header().Set(peer.HeaderStreamed, "1")
		w.WriteHeader(resp.StatusCode)
		if err := httpbuf.CopyFlushed(w, resp.Body); err != nil {
			panic(http.ErrAbortHandler)
		}
		return
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// slotKey keys a request's slot in its context.
type slotKey struct{}

func slotFrom(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// slotOf is ctx's slot if h serves its request (a request another host
// serves has no slot for h's cells).
func (h *Host) slotOf(ctx context.Context) *slot {
	if s := slotFrom(ctx); s != nil && s.h == h {
		return s
	}
	return nil
}

// routed serves next with a routing slot in each request's context.
func (h *Host) routed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := &slot{h: h, r: r, w: w, forwarded: r.Header.Get(peer.HeaderForwarded) != ""}
		s.out = &slotWriter{s: s, header: http.Header{}}
		if r.Body != nil && r.Body != http.NoBody {
			s.body = &captureBody{rc: r.Body}
		}
		r2 := r.WithContext(context.WithValue(r.Context(), slotKey{}, s))
		if s.body != nil {
			r2.Body = s.body
		}
		s.r = r2
		next.ServeHTTP(s.out, r2)
		s.out.end()
	})
}

// slot is one request's routing state.
type slot struct {
	h         *Host
	r         *http.Request       // the request as the handler got it
	w         http.ResponseWriter // the connection's writer
	out       *slotWriter         // the handler's writer
	body      *captureBody        // nil without a body
	forwarded bool                // it came from another node or process

	mu       sync.Mutex
	inflight int  // cell calls of the request running now
	ran      bool // a cell call of the request ran (here, or a Fetch sent on)
	claimed  bool // a call is being (or was) sent on: no other call runs here
	answered bool // the answer is written: the handler's output is dropped
	// aborted: the owner's streamed answer broke midway after part of it
	// was written; the connection is aborted when the handler returns.
	aborted bool
	// claimedFor is the refusal the claim was made for.
	claimedFor *lease.CellOwnedElsewhereError
}

// call runs a typed call of the request (see the file comment).
func (s *slot) call(ctx context.Context, here func() error) error {
	s.mu.Lock()
	if err := s.closedLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.inflight++
	s.mu.Unlock()
	decided := false
	sent, err := s.h.reach(ctx, func() error {
		err := here()
		s.mu.Lock()
		if !decided {
			s.inflight--
		}
		if !isOwnedElsewhere(err) {
			s.ran, s.claimed = true, false
		}
		s.mu.Unlock()
		return err
	}, func(oe *lease.CellOwnedElsewhereError) error {
		if decided {
			return nil
		}
		decided = true
		if err := s.claim(oe); err != nil {
			return err
		}
		if s.forwarded {
			return s.notApplied(oe)
		}
		return nil
	}, s.sendRequest)
	if sent {
		s.mu.Lock()
		s.answered = true
		s.mu.Unlock()
		return ErrAnsweredByOwner
	}
	var oe *lease.CellOwnedElsewhereError
	var nr *NotRoutedError
	if errors.As(err, &oe) && !errors.As(err, &nr) && !decided {
		// Not routed at all: the host forwards nothing.
		return &NotRoutedError{Owned: oe, Reason: reasonNoRoute}
	}
	return err
}

// fetch runs a Fetch of the request: sent alone to the owner, unless the
// request itself came forwarded.
func (s *slot) fetch(ctx context.Context, class string, id cell.ID, req *http.Request, here func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	s.mu.Lock()
	if err := s.closedLocked(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.inflight++
	s.mu.Unlock()
	resp, err := s.h.fetch(ctx, class, id, req, here, s.sendAlone)
	s.mu.Lock()
	s.inflight--
	if !isOwnedElsewhere(err) {
		s.ran = true
	}
	s.mu.Unlock()
	return resp, err
}

// sendAlone decides whether a call of the request that is sent alone to
// its owner (a Fetch, a method call), refused here for oe, may go: always,
// unless the request itself came forwarded and none of it ran here yet —
// then the request is answered "not applied" and the call fails.
func (s *slot) sendAlone(oe *lease.CellOwnedElsewhereError) error {
	if !s.forwarded || s.partlyRan() {
		// A call sent alone is a call of its own: once part of a
		// forwarded request ran here, the request can no longer be
		// answered "not applied", and this call goes to its owner (where
		// it arrives forwarded, so it is never sent on).
		return nil
	}
	s.mu.Lock()
	s.inflight-- // this call did not run
	s.mu.Unlock()
	err := s.claim(oe)
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.notApplied(oe)
}

// partlyRan reports whether another cell call of the request ran (or is
// running) here, besides the one asking.
func (s *slot) partlyRan() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran || s.inflight > 1
}

// closedLocked refuses a call once the request was answered or sent on.
func (s *slot) closedLocked() error {
	switch {
	case s.answered:
		return ErrAnsweredByOwner
	case s.claimed:
		return &NotRoutedError{Owned: s.claimedFor, Reason: reasonClaimed}
	}
	return nil
}

// claim takes the request for sending to oe's owner, or says why not.
func (s *slot) claim(oe *lease.CellOwnedElsewhereError) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ran || s.inflight > 0:
		return &NotRoutedError{Owned: oe, Reason: reasonRan}
	case s.out.started:
		return &NotRoutedError{Owned: oe, Reason: reasonStarted}
	case s.claimed || s.answered:
		return &NotRoutedError{Owned: oe, Reason: reasonClaimed}
	}
	s.claimed, s.claimedFor = true, oe
	return nil
}

// notApplied answers a forwarded request refused here before any of it ran:
// the sender looks at the cell's owner again.
func (s *slot) notApplied(oe *lease.CellOwnedElsewhereError) error {
	s.mu.Lock()
	s.answered = true
	s.mu.Unlock()
	s.w.Header().Set(peer.HeaderNotApplied, "owned elsewhere")
	httperr.Write(s.w, oe)
	return oe
}

// sendRequest sends the whole request to oe's owner and writes its answer.
func (s *slot) sendRequest(oe *lease.CellOwnedElsewhereError) error {
	if cell.IsWebSocketUpgrade(s.r) {
		// Its answer is a connection: relayed, not forwarded (websocket.go).
		return s.h.relayWebSocket(s.r.Context(), oe, s.w, s.r)
	}
	var body []byte
	if s.body != nil {
		var err error
		if body, err = s.body.all(peer.MaxBody); err != nil {
			return err
		}
	}
	r := s.r.WithContext(s.r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	tw := &touchedWriter{ResponseWriter: s.w}
	err := s.h.forward(s.r.Context(), oe, tw, r)
	if err != nil && tw.touched {
		// A streamed answer that broke midway: part of it went out, so
		// the request was answered, and the connection must end broken.
		s.mu.Lock()
		s.aborted = true
		s.mu.Unlock()
		return nil
	}
	return err
}

// touchedWriter records whether anything was written through it.
type touchedWriter struct {
	http.ResponseWriter
	touched bool
}

func (t *touchedWriter) WriteHeader(code int) {
	t.touched = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *touchedWriter) Write(p []byte) (int, error) {
	t.touched = true
	return t.ResponseWriter.Write(p)
}

func (t *touchedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// slotWriter is the handler's http.ResponseWriter: it keeps the handler's
// headers apart until its answer starts, and drops the handler's output
// once the request was answered by the cell's owner. For a forwarded
// request the status goes out with the first Write or Flush (or when the
// handler returns), so that an answer that flushes before its first byte
// (a stream: Stub.ServeHTTP does so) is marked peer.HeaderStreamed, and
// the node that sent it here copies it through as it comes.
type slotWriter struct {
	s       *slot
	header  http.Header
	started bool // WriteHeader was called (the handler's answer started)
	code    int
	sent    bool // the status went out on the connection
}

// send writes the status on the connection, once; streamed marks the
// answer peer.HeaderStreamed when it is a forwarded request's.
func (w *slotWriter) send(streamed bool) {
	if w.sent {
		return
	}
	w.sent = true
	if streamed && w.s.forwarded {
		w.s.w.Header().Set(peer.HeaderStreamed, "1")
	}
	w.s.w.WriteHeader(w.code)
}

// end runs when the handler returned: a status not sent yet goes out, and
// a stream the owner broke midway aborts the connection.
func (w *slotWriter) end() {
	s := w.s
	s.mu.Lock()
	answered, started, aborted := s.answered, w.started, s.aborted
	s.mu.Unlock()
	if aborted {
		panic(http.ErrAbortHandler)
	}
	if started && !answered {
		w.send(false)
	}
}

func (w *slotWriter) Header() http.Header { return w.header }

func (w *slotWriter) WriteHeader(code int) {
	s := w.s
	s.mu.Lock()
	if s.answered || w.started {
		s.mu.Unlock()
		return
	}
	w.started = true
	w.code = code
	s.mu.Unlock()
	dst := s.w.Header()
	for k, vs := range w.header {
		dst[k] = vs
	}
	if !s.forwarded || code < 200 {
		// Only a forwarded request's answer may be marked streamed; a
		// 1xx (a WebSocket's 101 before its hijack) goes at once.
		w.send(false)
	}
}

func (w *slotWriter) Write(p []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	answered, started := s.answered, w.started
	s.mu.Unlock()
	if answered {
		return len(p), nil
	}
	if !started {
		w.WriteHeader(http.StatusOK)
	}
	w.send(false)
	return s.w.Write(p)
}

// Flush flushes the answer, if the connection's writer can.
func (w *slotWriter) Flush() {
	s := w.s
	s.mu.Lock()
	answered, started := s.answered, w.started
	s.mu.Unlock()
	if answered {
		return
	}
	if !started {
		w.WriteHeader(http.StatusOK)
	}
	w.send(true)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer (for
// deadlines; a handler that hijacks the connection is never routed).
func (w *slotWriter) Unwrap() http.ResponseWriter { return w.s.w }

// captureBody keeps the first peer.MaxBody+1 bytes the handler reads of
// the request body, so the whole request can still be sent to a cell's
// owner.
type captureBody struct {
	rc  io.ReadCloser
	buf bytes.Buffer
	eof bool
}

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 && c.buf.Len() <= peer.MaxBody {
		keep := min(n, peer.MaxBody+1-c.buf.Len())
		c.buf.Write(p[:keep])
	}
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }

// all is the whole body: what was read, then the rest, at most limit
// bytes (else a *peer.BodyTooLargeError).
func (c *captureBody) all(limit int64) ([]byte, error) {
	if int64(c.buf.Len()) > limit {
		return nil, &peer.BodyTooLargeError{Limit: limit}
	}
	if !c.eof {
		rest, err := io.ReadAll(io.LimitReader(c.rc, limit-int64(c.buf.Len())+1))
		if err != nil {
			return nil, err
		}
		c.buf.Write(rest)
		c.eof = true
		if int64(c.buf.Len()) > limit {
			return nil, &peer.BodyTooLargeError{Limit: limit}
		}
	}
	return c.buf.Bytes(), nil
}

// namedID gives id back with the name a forwarding node sent beside it
// (headerCellName), when that name is the one id was derived from, so a
// forwarded call keeps State.ID().Name() as it had at the caller.
func namedID(ns *cell.Namespace[any], id cell.ID, r *http.Request) cell.ID {
	if n := r.Header.Get(headerCellName); n != "" {
		if name, err := url.PathUnescape(n); err == nil {
			if named := ns.IDFromName(name); named.Equal(id) {
				return named
			}
		}
	}
	return id
}
