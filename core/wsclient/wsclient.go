// Package wsclient is a small WebSocket client for code that may import
// only core and the standard library (the conformance suites, tools): it
// dials, sends and receives messages, and says how a socket was closed. It
// wraps github.com/coder/websocket, the library core/cell serves sockets
// with (docs/decisions.md).
package wsclient

import (
	"context"
	"errors"

	"github.com/coder/websocket"
)

// Conn is one client socket. Its methods may be called from one reader
// and one writer goroutine at a time.
type Conn struct {
	c *websocket.Conn
}

// Dial opens a socket to url (ws:// or http://). ctx bounds the handshake
// only.
func Dial(ctx context.Context, url string) (*Conn, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	return &Conn{c: c}, nil
}

// WriteText sends a text message.
func (c *Conn) WriteText(ctx context.Context, s string) error {
	return c.c.Write(ctx, websocket.MessageText, []byte(s))
}

// WriteBinary sends a binary message.
func (c *Conn) WriteBinary(ctx context.Context, b []byte) error {
	return c.c.Write(ctx, websocket.MessageBinary, b)
}

// Read receives the next message. A ctx that ends closes the socket (the
// library's rule): read with context.Background and close the socket to
// stop a reader.
func (c *Conn) Read(ctx context.Context) (data []byte, binary bool, err error) {
	typ, b, err := c.c.Read(ctx)
	return b, typ == websocket.MessageBinary, err
}

// Close sends a Close frame with code and reason and waits (briefly) for
// the answer.
func (c *Conn) Close(code int, reason string) error {
	return c.c.Close(websocket.StatusCode(code), reason)
}

// CloseNow drops the connection without a Close frame.
func (c *Conn) CloseNow() error { return c.c.CloseNow() }

// CloseCode is the code of the Close frame err reports (from Read), or -1
// when the socket ended without one.
func CloseCode(err error) int {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	return -1
}
