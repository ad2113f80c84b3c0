package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/cellb/cellb/core/cell"
	"github.com/cellb/cellb/core/lease"
	"github.com/cellb/cellb/core/peer"
)

// A WebSocket upgrade is routed like any request (routing.go): when its
// first cell call (cell.Upgrade's) is refused because another node or
// process owns the cell, the host does not forward the request whole (its
// answer is a connection, not a reply) but relays it: it opens a WebSocket
// to the owner (signed, on the peer port; or on the local socket of the
// process holding the shard), completes the client's handshake once the
// owner completed its own, and copies frames both ways. The owner holds
// the socket (and hibernates the object behind it); this node only
// carries frames. When the owner's side ends without a Close frame (the
// owner died or its link failed) the client's socket is closed with 1012;
// a Close from either side is passed on with its code.

// hopHeaders are the handshake's own headers: the relay's dial sets its
// own.
var hopHeaders = []string{
	"Connection", "Upgrade", "Sec-Websocket-Key", "Sec-Websocket-Version",
	"Sec-Websocket-Extensions", "Sec-Websocket-Accept", "Sec-Websocket-Protocol",
	"Content-Length", "Transfer-Encoding", "Te", "Trailer", "Keep-Alive",
	"Proxy-Connection", "Host", "Origin",
}

// wsRelays are the sockets this node relays, so Close can end them.
type wsRelays struct {
	mu     sync.Mutex
	open   map[*wsRelay]struct{}
	closed bool
}

type wsRelay struct {
	client, owner *websocket.Conn
}

func (rs *wsRelays) add(r *wsRelay) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return false
	}
	if rs.open == nil {
		rs.open = map[*wsRelay]struct{}{}
	}
	rs.open[r] = struct{}{}
	return true
}

func (rs *wsRelays) remove(r *wsRelay) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.open, r)
}

// closeAll ends every relayed socket: the client is told 1012 (this node,
// its route to the owner, is going away) and the owner 1001.
func (rs *wsRelays) closeAll() {
	rs.mu.Lock()
	rs.closed = true
	open := rs.open
	rs.open = nil
	rs.mu.Unlock()
	var wg sync.WaitGroup
	for r := range open {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_ = r.client.Close(websocket.StatusServiceRestart, "the relaying node is going away")
		}()
		go func() {
			defer wg.Done()
			_ = r.owner.Close(websocket.StatusGoingAway, "the relaying node is going away")
		}()
	}
	wg.Wait()
}

// relayWebSocket relays the upgrade r to oe's owner (see the file
// comment). Like h.forward it returns a *peer.NotAppliedError when the
// owner provably did not take the socket (the caller may look again), and
// nil once the client's socket was answered, by the owner's refusal or by
// a relay that ran until either side closed.
func (h *Host) relayWebSocket(ctx context.Context, oe *lease.CellOwnedElsewhereError, w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get(peer.HeaderForwarded) != "" {
		return peer.ErrAlreadyForwarded
	}
	hdr := r.Header.Clone()
	for _, k := range hopHeaders {
		hdr.Del(k)
	}
	hdr.Set(peer.HeaderForwarded, h.name)
	var protocols []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				protocols = append(protocols, p)
			}
		}
	}
	opts := &websocket.DialOptions{HTTPHeader: hdr, Subprotocols: protocols}
	var u string
	if path, ok := strings.CutPrefix(oe.Addr, "unix:"); ok {
		// The process holding the shard, on this host.
		u = "ws://shard-holder" + r.URL.RequestURI()
		opts.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", path)
			},
		}}
	} else {
		if h.peerKey == nil {
			return errors.New("host: this node has no peer key to reach the owner with")
		}
		u = "ws://" + oe.Addr + r.URL.RequestURI()
		signed, err := http.NewRequest(http.MethodGet, "http://"+oe.Addr+r.URL.RequestURI(), nil)
		if err != nil {
			return err
		}
		signed.Header = hdr
		if err := peer.Sign(signed, nil, h.peerKey, peer.Target{Node: oe.Owner, Incarnation: oe.Incarnation, Addr: oe.Addr}, h.clk.Now()); err != nil {
			return err
		}
		opts.HTTPHeader = signed.Header
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	owner, resp, err := websocket.Dial(dctx, u, opts)
	cancel()
	if err != nil {
		if resp == nil {
			return &peer.NotAppliedError{Addr: oe.Addr, Reason: fmt.Sprintf("the WebSocket to the owner was not opened: %v", err)}
		}
		body, _ := io.ReadAll(resp.Body)
		if why := resp.Header.Get(peer.HeaderNotApplied); why != "" {
			return &peer.NotAppliedError{Addr: oe.Addr, Reason: fmt.Sprintf("it answered %s (%s)", resp.Status, why)}
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return &peer.RefusedError{Addr: oe.Addr, Message: strings.TrimSpace(string(body))}
		}
		// The owner refused the socket (the object did not accept it, a
		// limit): its answer is the client's.
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
		return nil
	}
	owner.SetReadLimit(cell.MaxWebSocketMessage)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	// The client gets the subprotocol the owner picked, if any.
	var picked []string
	if p := owner.Subprotocol(); p != "" {
		picked = []string{p}
	}
	client, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: picked})
	if err != nil {
		owner.Close(websocket.StatusGoingAway, "the client's handshake failed")
		return nil // Accept answered the client
	}
	// One more byte than the limit passes, so the owner (which knows the
	// object) is the one to refuse it with 1009.
	client.SetReadLimit(cell.MaxWebSocketMessage + 1)
	rl := &wsRelay{client: client, owner: owner}
	if !h.wsRelays.add(rl) {
		client.Close(websocket.StatusServiceRestart, "the relaying node is going away")
		owner.Close(websocket.StatusGoingAway, "the relaying node is going away")
		return nil
	}
	defer h.wsRelays.remove(rl)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pump(owner, client, websocket.StatusServiceRestart, "the cell's owner is unavailable")
	}()
	pump(client, owner, websocket.StatusGoingAway, "the client went away")
	<-done
	return nil
}

// pump copies messages from src to dst until src ends, then closes dst:
// with src's Close code, or lost (code, reason) when src ended without one.
func pump(src, dst *websocket.Conn, lost websocket.StatusCode, reason string) {
	ctx := context.Background() // a relay lives as long as its sockets
	for {
		typ, b, err := src.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			switch {
			case errors.As(err, &ce) && ce.Code != websocket.StatusNoStatusRcvd:
				_ = dst.Close(ce.Code, ce.Reason)
			case errors.As(err, &ce):
				_ = dst.Close(websocket.StatusNormalClosure, "")
			case errors.Is(err, websocket.ErrMessageTooBig):
				_ = dst.Close(websocket.StatusMessageTooBig, "message too big")
			default:
				_ = dst.Close(lost, reason)
			}
			return
		}
		if err := dst.Write(ctx, typ, b); err != nil {
			_ = src.CloseNow()
			return
		}
	}
}
