package cell

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// WebSocket is the server end of a WebSocket an object accepted with
// State.AcceptWebSocket. It belongs to the node, not to the object's
// instance: the object may be evicted (it hibernates) while the socket
// stays open, and the socket's next message activates it again. The same
// *WebSocket is handed to every event of the socket, before and after a
// hibernation.
//
// Sends are queued and leave in order, each once every commit the cell
// made before it is durable (the output gate): a send made inside one of
// the object's turns waits for that turn's own commit too. If that commit
// fails the send is dropped and the socket is closed with 1011.
type WebSocket struct {
	rt   *Runtime
	set  *socketSet // nil until accepted
	tags []string   // set once at accept

	mu      sync.Mutex
	conn    *websocket.Conn // nil until the handshake is done
	queue   []*frame
	writing bool // a goroutine is draining queue
	// closed: no more sends (the object, the peer or the runtime closed
	// it). stop is closed at the same time.
	closed bool
	// byRuntime: the runtime closed it (a reset, the owner going away):
	// no WebSocketClose event follows.
	byRuntime bool
	// byObject: the object closed it with Close: no WebSocketClose event
	// follows either (it knows).
	byObject bool
	// closeCode and closeReason are the runtime's Close, for a socket
	// whose handshake was still under way (bind sends it).
	closeCode   websocket.StatusCode
	closeReason string
	stop        chan struct{}
	attachment  []byte
	autoAt      time.Time
}

// frame is one queued outgoing message or close.
type frame struct {
	binary bool
	data   []byte
	close  bool
	code   websocket.StatusCode
	reason string

	// ready is closed once the frame's wait is known: a frame sent inside
	// a turn waits for the turn to end (nil: known at once).
	ready chan struct{}
	// drop: the turn it was sent in did not commit; it never leaves.
	drop bool
	// inst and ps are the commits it waits for (inst nil: none).
	inst *instance
	ps   pendingSet
}

func newWebSocket(rt *Runtime) *WebSocket {
	return &WebSocket{rt: rt, stop: make(chan struct{})}
}

// Tags are the tags the socket was accepted with.
func (ws *WebSocket) Tags() []string { return slices.Clone(ws.tags) }

// Send queues a binary message. ctx says which turn the send belongs to:
// inside a turn of the socket's own object the message waits for that
// turn to commit, then for durability.
func (ws *WebSocket) Send(ctx context.Context, data []byte) error {
	return ws.enqueue(ctx, &frame{binary: true, data: slices.Clone(data)})
}

// SendText queues a text message; see Send.
func (ws *WebSocket) SendText(ctx context.Context, text string) error {
	return ws.enqueue(ctx, &frame{data: []byte(text)})
}

// Close queues a Close frame with code and reason, behind the messages
// already queued and gated like them. No message can be sent after it,
// and no WebSocketClose event follows for this socket.
func (ws *WebSocket) Close(ctx context.Context, code int, reason string) error {
	if len(reason) > maxCloseReason {
		reason = reason[:maxCloseReason]
	}
	err := ws.enqueue(ctx, &frame{close: true, code: websocket.StatusCode(code), reason: reason})
	if err == nil {
		ws.mu.Lock()
		ws.closed, ws.byObject = true, true
		ws.mu.Unlock()
	}
	return err
}

// maxCloseReason is what fits in a Close frame's 125 bytes after the code.
const maxCloseReason = 123

// SerializeAttachment keeps v (encoded as JSON) with the socket, in the
// node's memory: it survives the object's hibernation, not a restart.
// An encoding larger than MaxWebSocketAttachment is refused with a
// *WebSocketLimitError.
func (ws *WebSocket) SerializeAttachment(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxWebSocketAttachment {
		return &WebSocketLimitError{What: "attachment bytes", Limit: MaxWebSocketAttachment, Got: len(b)}
	}
	ws.mu.Lock()
	ws.attachment = b
	ws.mu.Unlock()
	return nil
}

// DeserializeAttachment decodes the last attachment into v and reports
// whether there was one.
func (ws *WebSocket) DeserializeAttachment(v any) (bool, error) {
	ws.mu.Lock()
	b := ws.attachment
	ws.mu.Unlock()
	if b == nil {
		return false, nil
	}
	return true, json.Unmarshal(b, v)
}

// AutoResponseTime is when the socket last got the automatic response
// (State.SetWebSocketAutoResponse); false if never.
func (ws *WebSocket) AutoResponseTime() (time.Time, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.autoAt, !ws.autoAt.IsZero()
}

// enqueue adds f to the socket's queue with what it must wait for.
func (ws *WebSocket) enqueue(ctx context.Context, f *frame) error {
	if len(f.data) > MaxWebSocketMessage {
		return &WebSocketLimitError{What: "message bytes", Limit: MaxWebSocketMessage, Got: len(f.data)}
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.set == nil {
		return ErrWebSocketNotAccepted
	}
	if ws.closed {
		return ErrWebSocketClosed
	}
	// AllowUnconfirmed (of this cell) sends at once, as other outgoing I/O.
	if ev := eventFrom(ctx); ev != nil && ev.active.Load() && ev.inst.key == ws.set.key {
		if !unconfirmed(ctx, ev.inst) {
			f.ready = make(chan struct{})
			ev.deferFrame(f)
		}
	} else if inst := ws.rt.liveInstance(ws.set.key); inst != nil && !unconfirmed(ctx, inst) {
		f.inst, f.ps = inst, inst.commits.snapshot()
	}
	ws.queue = append(ws.queue, f)
	ws.kickLocked()
	return nil
}

// kickLocked starts the writer if there is anything to write and a
// connection to write it on.
func (ws *WebSocket) kickLocked() {
	if ws.writing || ws.conn == nil || len(ws.queue) == 0 {
		return
	}
	ws.writing = true
	go ws.drain()
}

// drain writes the queue in order, each frame after its wait. It ends when
// the queue is empty (the next send starts it again), so an idle socket
// has no writer goroutine.
func (ws *WebSocket) drain() {
	// Not the runtime's context: coder/websocket drops a connection whose
	// read or write context ends, and a closing runtime still sends 1012.
	ctx := context.Background()
	for {
		ws.mu.Lock()
		if len(ws.queue) == 0 || ws.conn == nil {
			ws.writing = false
			ws.mu.Unlock()
			return
		}
		f := ws.queue[0]
		ws.queue[0] = nil
		ws.queue = ws.queue[1:]
		conn := ws.conn
		ws.mu.Unlock()
		if f.ready != nil {
			select {
			case <-f.ready:
			case <-ws.stop:
				if !f.close {
					ws.stopWriting()
					return
				}
			}
		}
		if f.drop {
			ws.closeByRuntime(websocket.StatusInternalError, "the write before this message failed")
			ws.stopWriting()
			return
		}
		if f.inst != nil {
			if err := f.inst.awaitDurable(ws.rt.bg, f.ps); err != nil {
				ws.closeByRuntime(websocket.StatusInternalError, "the write before this message could not be proven durable")
				ws.stopWriting()
				return
			}
		}
		if f.close {
			ws.stopWriting()
			_ = conn.Close(f.code, f.reason)
			return
		}
		typ := websocket.MessageText
		if f.binary {
			typ = websocket.MessageBinary
		}
		if err := conn.Write(ctx, typ, f.data); err != nil {
			// The read loop sees the broken connection and ends the socket.
			ws.stopWriting()
			return
		}
	}
}

// stopWriting ends the writer for good: nothing queued will leave.
func (ws *WebSocket) stopWriting() {
	ws.mu.Lock()
	ws.queue = nil
	ws.mu.Unlock()
}

// closeByRuntime closes the socket at once with code (1011 after a failed
// commit or a reset, 1012 when the owner goes away), dropping what is
// queued. No WebSocketClose event follows: the object is gone or going.
func (ws *WebSocket) closeByRuntime(code websocket.StatusCode, reason string) <-chan struct{} {
	done := make(chan struct{})
	ws.mu.Lock()
	if ws.byRuntime {
		ws.mu.Unlock()
		close(done)
		return done
	}
	ws.byRuntime = true
	ws.closeCode, ws.closeReason = code, reason
	ws.markClosedLocked()
	ws.queue = nil
	conn := ws.conn
	ws.mu.Unlock()
	if conn == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		_ = conn.Close(code, reason)
	}()
	return done
}

func (ws *WebSocket) markClosedLocked() {
	if !ws.closed {
		ws.closed = true
	}
	select {
	case <-ws.stop:
	default:
		close(ws.stop)
	}
}

// errNotOpen: the socket was closed before its handshake finished.
var errNotOpen = errors.New("cell: the WebSocket was closed before its handshake finished")
