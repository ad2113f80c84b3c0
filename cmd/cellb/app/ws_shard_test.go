package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketBetweenTwoProcessesOfOneHost: two servers on one --data
// directory (the single-host mode). A socket joining through the second
// for a room the first holds is relayed over the first's local socket:
// both sockets get every message. When the second (the relay) closes, its
// client is closed with 1012 and the room goes on; when the first (the
// owner) closes, its sockets are closed with 1012.
func TestWebSocketBetweenTwoProcessesOfOneHost(t *testing.T) {
	dir := t.TempDir()
	_, hs1, stop1 := startClosable(t, dir)
	_, hs2, stop2 := startClosable(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c1, err := dialRoom(ctx, hs1.URL, "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer c1.CloseNow()
	c2, err := dialRoom(ctx, hs2.URL, "shared")
	if err != nil {
		t.Fatalf("the second server did not relay the socket: %v", err)
	}
	defer c2.CloseNow()
	for i, from := range []*websocket.Conn{c2, c1} {
		text := fmt.Sprintf("from %d", i)
		if err := from.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
			t.Fatal(err)
		}
		for j, c := range []*websocket.Conn{c1, c2} {
			m, err := readMessage(ctx, c)
			if err != nil || m.Text != text {
				t.Fatalf("socket %d: %+v %v, want %q", j+1, m, err, text)
			}
		}
	}
	// The relaying server closes: its client is told 1012, and the room's
	// other socket still works.
	go stop2()
	if _, _, err := c2.Read(ctx); websocket.CloseStatus(err) != websocket.StatusServiceRestart {
		t.Fatalf("the relayed socket: %v, want a Close with 1012 from the closing relay", err)
	}
	c3, err := dialRoom(ctx, hs1.URL, "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer c3.CloseNow()
	if err := c3.Write(ctx, websocket.MessageText, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	for j, c := range []*websocket.Conn{c1, c3} {
		if m, err := readMessage(ctx, c); err != nil || m.Text != "still here" {
			t.Fatalf("socket %d after the relay closed: %+v %v", j+1, m, err)
		}
	}
	// The owner closes: its sockets are closed with 1012.
	go stop1()
	for j, c := range []*websocket.Conn{c1, c3} {
		_, _, err := c.Read(ctx)
		if code := websocket.CloseStatus(err); code != websocket.StatusServiceRestart {
			t.Fatalf("socket %d: %v, want a Close with 1012", j+1, err)
		}
	}
}
