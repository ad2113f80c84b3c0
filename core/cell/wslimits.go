package cell

import (
	"errors"
	"fmt"
	"net/http"
)

// The limits of hibernatable WebSockets, as Durable Objects has them.
const (
	// MaxWebSocketsPerObject is how many sockets one object may hold.
	MaxWebSocketsPerObject = 32768
	// MaxWebSocketTags is how many distinct tags a socket may have.
	MaxWebSocketTags = 10
	// MaxWebSocketTagLen is the longest tag, in bytes.
	MaxWebSocketTagLen = 256
	// MaxWebSocketMessage is the largest message received or sent, in
	// bytes. A larger received message closes the socket with 1009.
	MaxWebSocketMessage = 32 << 20
	// MaxWebSocketAttachment is the largest attachment, encoded.
	MaxWebSocketAttachment = 16 << 10
	// MaxAutoResponseLen bounds the automatic request and response.
	MaxAutoResponseLen = 2048
)

// WebSocketLimitError is a WebSocket limit being passed: too many sockets
// on one object, too many or too long tags, a message or an attachment
// too large.
type WebSocketLimitError struct {
	What  string // what is counted, e.g. "sockets per object"
	Limit int
	Got   int
}

func (e *WebSocketLimitError) Error() string {
	return fmt.Sprintf("cell: WebSocket limit: %d %s, at most %d", e.Got, e.What, e.Limit)
}

// HTTPStatus is how core/httperr answers an upgrade refused by a limit:
// 429 for an object holding too many sockets (another may come free), 400
// for the rest (the request itself is at fault).
func (e *WebSocketLimitError) HTTPStatus() int {
	if e.What == whatSockets {
		return http.StatusTooManyRequests
	}
	return http.StatusBadRequest
}

const whatSockets = "sockets per object"

var (
	// ErrWebSocketNotAccepted: the socket was not accepted with
	// State.AcceptWebSocket (Upgrade's accept function did not keep it,
	// or a send came before).
	ErrWebSocketNotAccepted = errors.New("cell: the WebSocket was not accepted with State.AcceptWebSocket")
	// ErrWebSocketAccepted: AcceptWebSocket was called twice for one
	// socket.
	ErrWebSocketAccepted = errors.New("cell: the WebSocket was already accepted")
	// ErrWebSocketClosed: a send on a closed or closing socket.
	ErrWebSocketClosed = errors.New("cell: the WebSocket is closed")
	// ErrUpgradeAnswered wraps a failed handshake: Upgrade has already
	// answered the request, so the caller must not write to it.
	ErrUpgradeAnswered = errors.New("cell: the WebSocket handshake failed and was answered")
)
