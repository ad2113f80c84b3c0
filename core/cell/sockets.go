package cell

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/cellb/cellb/core/lease"
)

// The class's WebSocket handlers. An object implements those it needs;
// each event is one turn through its input gate (a socket's messages come
// in order, one at a time), and its writes commit as a request's do.
type (
	// WebSocketMessager receives the messages of the object's sockets
	// (not control frames, nor the automatic request). binary says which
	// kind the message was. An error returned is logged; writes made
	// before it are committed.
	WebSocketMessager interface {
		WebSocketMessage(ctx context.Context, ws *WebSocket, data []byte, binary bool) error
	}
	// WebSocketCloser learns that the peer closed a socket (wasClean, with
	// its code and reason) or that the connection dropped without a
	// Close frame (1006, wasClean false). It is not called for a socket
	// the object closed itself, or the runtime closed.
	WebSocketCloser interface {
		WebSocketClose(ctx context.Context, ws *WebSocket, code int, reason string, wasClean bool) error
	}
	// WebSocketErrorer learns of a socket failing for another reason than
	// a disconnect: a received message over MaxWebSocketMessage (a
	// *WebSocketLimitError; the socket is closed with 1009).
	WebSocketErrorer interface {
		WebSocketError(ctx context.Context, ws *WebSocket, err error) error
	}
)

// socketSet is one cell's sockets and its automatic response. It lives in
// the runtime, not in an instance, so an evicted (hibernated) object keeps
// its sockets; it is dropped when its last socket ends.
type socketSet struct {
	rt  *Runtime
	key string
	cls *class
	id  ID

	mu      sync.Mutex
	sockets []*WebSocket // in accept order
	autoReq string       // "" : no automatic response
	autoRes string
}

// socketRegistry is the runtime's socket sets, by cell key.
type socketRegistry struct {
	mu   sync.Mutex
	sets map[string]*socketSet
}

// setFor returns the cell's set, creating it if create.
func (r *socketRegistry) setFor(rt *Runtime, inst *instance, create bool) *socketSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sets[inst.key]
	if s == nil && create {
		if r.sets == nil {
			r.sets = map[string]*socketSet{}
		}
		s = &socketSet{rt: rt, key: inst.key, cls: inst.cls, id: inst.id}
		r.sets[inst.key] = s
	}
	return s
}

func (r *socketRegistry) get(key string) *socketSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sets[key]
}

// remove takes ws out of its set, and drops the set once empty.
func (r *socketRegistry) remove(ws *WebSocket) {
	s := ws.set
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.sockets {
		if x == ws {
			s.sockets = append(s.sockets[:i], s.sockets[i+1:]...)
			break
		}
	}
	if len(s.sockets) == 0 && r.sets[s.key] == s {
		delete(r.sets, s.key)
	}
}

// closeCell closes every socket of the cell key with code and reason, at
// once (a reset: 1011).
func (r *socketRegistry) closeCell(key string, code websocket.StatusCode, reason string) {
	if s := r.get(key); s != nil {
		for _, ws := range s.list("") {
			ws.closeByRuntime(code, reason)
		}
	}
}

// closeAll closes every socket of the runtime (the owner going away: 1012).
func (r *socketRegistry) closeAll(code websocket.StatusCode, reason string) {
	r.mu.Lock()
	sets := make([]*socketSet, 0, len(r.sets))
	for _, s := range r.sets {
		sets = append(sets, s)
	}
	r.mu.Unlock()
	var closing []<-chan struct{}
	for _, s := range sets {
		for _, ws := range s.list("") {
			closing = append(closing, ws.closeByRuntime(code, reason))
		}
	}
	// Give the Close frames a moment to leave (and their answers to come
	// back) before the process may exit; a peer that does not answer is
	// not waited for past closeGrace.
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	for _, done := range closing {
		select {
		case <-done:
		case <-grace.C:
			return
		}
	}
}

// closeGrace bounds how long closeAll waits for the Close handshakes.
const closeGrace = 2 * time.Second

// count is how many sockets the runtime holds.
func (r *socketRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.sets {
		s.mu.Lock()
		n += len(s.sockets)
		s.mu.Unlock()
	}
	return n
}

// list is the set's open sockets with tag ("": all), in accept order.
func (s *socketSet) list(tag string) []*WebSocket {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*WebSocket, 0, len(s.sockets))
	for _, ws := range s.sockets {
		if tag == "" || containsString(ws.tags, tag) {
			out = append(out, ws)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// OpenWebSockets is how many WebSockets the runtime holds open, for all
// its cells, awake or hibernated.
func (rt *Runtime) OpenWebSockets() int { return rt.sockets.count() }

// liveInstance is the cell's instance in memory, if any.
func (rt *Runtime) liveInstance(key string) *instance {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.cells[key]
}

// AcceptWebSocket keeps ws (from Upgrade) as one of the object's sockets,
// with tags (duplicates dropped). From then on its messages and close
// reach the object's WebSocket handlers, and Send and Close work. Past the
// limits (MaxWebSocketsPerObject, MaxWebSocketTags, MaxWebSocketTagLen) it
// fails with a *WebSocketLimitError.
func (s *State) AcceptWebSocket(ws *WebSocket, tags ...string) error {
	if ws == nil {
		return ErrWebSocketNotAccepted
	}
	var kept []string
	for _, t := range tags {
		if len(t) > MaxWebSocketTagLen {
			return &WebSocketLimitError{What: "tag bytes", Limit: MaxWebSocketTagLen, Got: len(t)}
		}
		if !containsString(kept, t) {
			kept = append(kept, t)
		}
	}
	if len(kept) > MaxWebSocketTags {
		return &WebSocketLimitError{What: "tags", Limit: MaxWebSocketTags, Got: len(kept)}
	}
	inst := s.inst
	rt := inst.rt
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.set != nil {
		return ErrWebSocketAccepted
	}
	if ws.closed {
		return ErrWebSocketClosed
	}
	set := rt.sockets.setFor(rt, inst, true)
	set.mu.Lock()
	defer set.mu.Unlock()
	if len(set.sockets) >= MaxWebSocketsPerObject {
		return &WebSocketLimitError{What: whatSockets, Limit: MaxWebSocketsPerObject, Got: len(set.sockets) + 1}
	}
	ws.set, ws.tags = set, kept
	set.sockets = append(set.sockets, ws)
	return nil
}

// WebSockets lists the object's open sockets with tag ("": all of them),
// in the order they were accepted. A socket closing (Close was called)
// is still listed until its close ends.
func (s *State) WebSockets(tag string) []*WebSocket {
	set := s.inst.rt.sockets.get(s.inst.key)
	if set == nil {
		return nil
	}
	return set.list(tag)
}

// SetWebSocketAutoResponse makes every text message equal to request be
// answered with response by the node, without an event and without waking
// a hibernated object (the socket's AutoResponseTime records it). An
// empty request removes the pair. Each is at most MaxAutoResponseLen
// bytes. The pair lives with the sockets: it survives hibernation, and
// goes when the object is reset or has no socket left.
func (s *State) SetWebSocketAutoResponse(request, response string) error {
	for _, v := range []string{request, response} {
		if len(v) > MaxAutoResponseLen {
			return &WebSocketLimitError{What: "automatic request or response bytes", Limit: MaxAutoResponseLen, Got: len(v)}
		}
	}
	rt := s.inst.rt
	set := rt.sockets.setFor(rt, s.inst, request != "")
	if set == nil {
		return nil
	}
	set.mu.Lock()
	set.autoReq, set.autoRes = request, response
	set.mu.Unlock()
	return nil
}

// WebSocketAutoResponse is the automatic request and response, if set.
func (s *State) WebSocketAutoResponse() (request, response string, ok bool) {
	set := s.inst.rt.sockets.get(s.inst.key)
	if set == nil {
		return "", "", false
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.autoReq, set.autoRes, set.autoReq != ""
}

// autoResponse is the response to a text message, if it is the request.
func (s *socketSet) autoResponse(msg []byte) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.autoReq == "" || string(msg) != s.autoReq {
		return "", false
	}
	return s.autoRes, true
}

// readLoop receives the socket's messages until it ends, delivering each
// as one event (in order: the next is read once the event is over).
func (ws *WebSocket) readLoop(conn *websocket.Conn) {
	ctx := context.Background() // see drain
	set := ws.set
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			ws.ended(err)
			return
		}
		if typ == websocket.MessageText {
			if res, ok := set.autoResponse(data); ok {
				ws.mu.Lock()
				ws.autoAt = ws.rt.clk.Now()
				if !ws.closed {
					ws.queue = append(ws.queue, &frame{data: []byte(res)})
					ws.kickLocked()
				}
				ws.mu.Unlock()
				continue
			}
		}
		binary := typ == websocket.MessageBinary
		ws.event(func(ctx context.Context, obj any) error {
			if h, ok := obj.(WebSocketMessager); ok {
				return h.WebSocketMessage(ctx, ws, data, binary)
			}
			return nil
		})
	}
}

// noReplyKey marks the context of a socket event: it has no reply to hold
// behind the output gate (its sends wait on their own), so the socket's
// next message may start as soon as the turn committed, as in workerd.
type noReplyKey struct{}

// awaitReply is the output gate of an event's reply; a socket event has
// none.
func (inst *instance) awaitReply(ctx context.Context, ps pendingSet) error {
	if ctx.Value(noReplyKey{}) != nil {
		return nil
	}
	return inst.awaitDurable(ctx, ps)
}

// event runs fn as one event of the socket's object and handles its
// failure: a cell now owned elsewhere or a runtime closing closes the
// socket with 1012; a reset has closed it with 1011 already.
func (ws *WebSocket) event(fn func(ctx context.Context, obj any) error) {
	set := ws.set
	ctx := context.WithValue(ws.rt.bg, noReplyKey{}, true)
	err := ws.rt.dispatch(ctx, set.cls, set.id, func(ctx context.Context, obj any) error {
		// The mark is this event's alone: a call the handler makes to
		// another object (or this one) is a request whose reply waits.
		return fn(context.WithValue(ctx, noReplyKey{}, nil), obj)
	})
	var oe *lease.CellOwnedElsewhereError
	var be *BrokenObjectError
	switch {
	case err == nil:
	case errors.As(err, &oe), errors.Is(err, ErrClosed):
		ws.closeByRuntime(websocket.StatusServiceRestart, "the cell's owner went away")
	case errors.As(err, &be):
		ws.closeByRuntime(websocket.StatusInternalError, "the object was reset")
	default:
		ws.rt.logger.Warn("cell WebSocket handler failed", "cell", set.key, "err", err)
	}
}

// ended finishes a socket whose connection ended with err, and tells the
// object unless it or the runtime closed the socket.
func (ws *WebSocket) ended(err error) {
	ws.mu.Lock()
	tell := !ws.byRuntime && !ws.byObject
	ws.markClosedLocked()
	ws.queue = nil
	ws.mu.Unlock()
	ws.rt.sockets.remove(ws)
	if !tell {
		return
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		lerr := &WebSocketLimitError{What: "message bytes", Limit: MaxWebSocketMessage, Got: MaxWebSocketMessage + 1}
		ws.event(func(ctx context.Context, obj any) error {
			if h, ok := obj.(WebSocketErrorer); ok {
				return h.WebSocketError(ctx, ws, lerr)
			}
			return nil
		})
		return
	}
	code, reason, clean := 1006, "WebSocket disconnected without sending Close frame.", false
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		code, reason, clean = int(ce.Code), ce.Reason, true
	}
	ws.event(func(ctx context.Context, obj any) error {
		if h, ok := obj.(WebSocketCloser); ok {
			return h.WebSocketClose(ctx, ws, code, reason, clean)
		}
		return nil
	})
}
