package cell

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Upgrade turns the WebSocket request r into one of the object's sockets.
// It runs accept on the object as one event, as Call does (so, in a node
// core/host built, on the cell's owner, wherever the request came in),
// with a new socket accept may keep with State.AcceptWebSocket. Once the
// event's commits are durable the handshake is answered (101) and the
// socket's messages start reaching the object's handlers. Messages sent
// before the handshake wait for it.
//
// Errors from accept, from the call or from AcceptWebSocket are returned
// with nothing written to w (ErrWebSocketNotAccepted if accept kept no
// socket); a failed handshake is answered by Upgrade and wraps
// ErrUpgradeAnswered. Upgrade returns once the socket is open: the socket
// outlives the request.
func Upgrade[O any](w http.ResponseWriter, r *http.Request, s *Stub[O], accept func(ctx context.Context, obj O, ws *WebSocket) error) error {
	if !IsWebSocketUpgrade(r) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "this is a WebSocket endpoint: the request must ask to upgrade", http.StatusUpgradeRequired)
		return fmt.Errorf("%w: not a WebSocket upgrade", ErrUpgradeAnswered)
	}
	ws := newWebSocket(s.ns.rt)
	_, err := Call(r.Context(), s, func(ctx context.Context, obj O) (struct{}, error) {
		return struct{}{}, accept(ctx, obj, ws)
	})
	ws.mu.Lock()
	accepted, closed := ws.set != nil, ws.closed
	ws.mu.Unlock()
	if err != nil || !accepted {
		if accepted {
			// Kept, but the call failed afterwards: the socket never opens.
			ws.closeByRuntime(websocket.StatusInternalError, "the upgrade failed")
			s.ns.rt.sockets.remove(ws)
		}
		if err == nil {
			err = ErrWebSocketNotAccepted
		}
		return err
	}
	if closed && ws.byRuntime {
		s.ns.rt.sockets.remove(ws)
		http.Error(w, errNotOpen.Error(), http.StatusServiceUnavailable)
		return fmt.Errorf("%w: %w", ErrUpgradeAnswered, errNotOpen)
	}
	// A server's read and write deadlines stay on a hijacked connection:
	// a socket lives as long as its peer wants.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		ws.closeByRuntime(websocket.StatusInternalError, "the handshake failed")
		s.ns.rt.sockets.remove(ws)
		return fmt.Errorf("%w: %w", ErrUpgradeAnswered, err)
	}
	ws.bind(conn)
	return nil
}

// IsWebSocketUpgrade reports whether r asks for a WebSocket (a GET with
// Upgrade: websocket), before any of it runs.
func IsWebSocketUpgrade(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return true
			}
		}
	}
	return false
}

// bind attaches the upgraded connection: queued frames leave, and the read
// loop starts.
func (ws *WebSocket) bind(conn *websocket.Conn) {
	conn.SetReadLimit(MaxWebSocketMessage)
	ws.mu.Lock()
	ws.conn = conn
	byRuntime, code, reason := ws.byRuntime, ws.closeCode, ws.closeReason
	ws.kickLocked()
	ws.mu.Unlock()
	if byRuntime {
		// Closed by the runtime during the handshake.
		go conn.Close(code, reason)
	}
	go ws.readLoop(conn)
}
